"""flax.config: flag defaults, update, env var names."""

import report
from flax import config

for name in (
  'flax_use_orbax_checkpointing',
  'flax_return_frozendict',
  'flax_fix_rng_separator',
  'flax_profile',
):
  report.value(name, getattr(config, name))
config.update('flax_return_frozendict', True)
report.value('updated', config.flax_return_frozendict)
with report.raises('unknown flag'):
  config.update('flax_no_such_flag', True)
