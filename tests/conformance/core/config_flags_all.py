"""flax.configurations: every flag, holders, bool_flag/int_flag, env parsing."""

import os

os.environ['FLAX_MAX_REPR_DEPTH'] = '3'
os.environ['NNX_GRAPH_MODE'] = 'false'
os.environ['MY_SCENARIO_FLAG'] = 'yes'

import report  # noqa: E402
from flax import config, configurations  # noqa: E402

for name in (
  'flax_filter_frames',
  'flax_profile',
  'flax_use_orbax_checkpointing',
  'flax_preserve_adopted_names',
  'flax_return_frozendict',
  'flax_fix_rng_separator',
  'flax_use_flaxlib',
  'flax_array_ref',
  'flax_pytree_module',
  'flax_max_repr_depth',
  'flax_always_shard_variable',
  'flax_hijax_variable',
  'nnx_graph_mode',
  'nnx_graph_updates',
):
  report.value(name, getattr(config, name))
report.value('holder name', configurations.flax_fix_rng.name)
report.value('holder value', configurations.flax_profile.value)
with report.raises('bool of holder'):
  bool(configurations.flax_profile)
config.update(configurations.flax_profile, False)
report.value('updated by holder', config.flax_profile)
with config.temp_flip_flag('return_frozendict', True):
  report.value('flipped', config.flax_return_frozendict)
report.value('restored', config.flax_return_frozendict)
with report.raises('flip with prefix'):
  with config.temp_flip_flag('flax_return_frozendict', True):
    pass
with report.raises('set attribute'):
  config.flax_profile = True
with report.raises('unknown attribute'):
  config.flax_not_a_flag
h = configurations.bool_flag('my_scenario_flag', default=False, help='')
report.value('bool_flag from env', h.value)
i = configurations.int_flag('my_scenario_int', default=None, help='')
report.value('int_flag', i.value)
config.update('my_scenario_int', 4)
report.value('int_flag updated', config.my_scenario_int)
with report.raises('defined twice'):
  configurations.bool_flag('my_scenario_flag', default=False, help='')
os.environ['SCENARIO_VAR'] = 'maybe'
with report.raises('bad bool env'):
  configurations.static_bool_env('SCENARIO_VAR', False)
os.environ['SCENARIO_VAR'] = '12'
report.value(
  'static_int_env', configurations.static_int_env('SCENARIO_VAR', None)
)
report.value(
  'static_int_env unset', configurations.static_int_env('NO_SUCH_VAR_X', 5)
)
