"""Variables holding non-array values: [...] indexes the value, so Python
scalars and sequences raise; get_value() works for any value."""

import jax.numpy as jnp
import numpy as np
import report
from flax import nnx

for label, value in [
  ('int', 3),
  ('tuple', (1, 2)),
  ('list', [1, 2]),
  ('none', None),
]:
  with report.raises(f'get-{label}'):
    nnx.Param(value)[...]
  report.value(f'get_value-{label}', nnx.Param(value).get_value())
report.array('np-scalar', nnx.Param(np.float32(2))[...])
report.value('dict-key', nnx.Param({'a': 1})['a'])
v = nnx.Param(3)
with report.raises('set-int'):
  v[...] = 4
d = nnx.Param({'a': 1})
d['a'] = 7
report.value('dict-set', d.get_value())
w = nnx.Param(jnp.ones(3))
w[...] = 5
report.array('broadcast-set', w[...])
with report.raises('shape-change'):
  w[...] = jnp.ones(2)
w[1] = 7
report.array('index-set', w[...])
with report.raises('ref-tuple'):
  nnx.Param((jnp.ones(1),), ref=True)
with report.printed('nested-variable'):
  print(nnx.Param(nnx.Param(1)))
