"""Variable hooks given as on_* metadata or overridden methods: they run,
and creating such Variables warns."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

with report.warns('metadata-hooks'):
  p = nnx.Param(
    jnp.ones(2),
    on_get_value=lambda v, x: x * 10,
    on_set_value=lambda v, x: x + 1,
    on_create_value=lambda v, x: x * 2,
  )
report.array('raw-after-create', p.get_raw_value())
report.array('get', p[...])
p[...] = jnp.zeros(2)
report.array('raw-after-set', p.get_raw_value())
report.value('metadata-keys', list(p.get_metadata(exclude_required=True)))

with report.warns('with_metadata-hooks'):
  init = nnx.with_metadata(
    jax.nn.initializers.ones, on_get_value=lambda v, x: x * 3, tag='t'
  )
with report.warns('with_metadata-no-hooks'):
  nnx.with_metadata(jax.nn.initializers.ones, tag='t')
meta = init(jax.random.key(0), (1,))
report.value(
  'variable-metadata-fields',
  [len(meta.on_set_value), len(meta.on_get_value), meta.metadata],
)
with report.warns('param-from-metadata'):
  q = nnx.Param(init(jax.random.key(0), (2,)))
report.array('hooked-value', q[...])
report.value('hooked-keys', list(q.get_metadata()))


class Shifted(nnx.Variable):
  def on_get_value(self, value):
    return value + 100


with report.warns('subclass-hook'):
  s = Shifted(jnp.ones(1))
report.array('subclass-hook-value', s[...])
