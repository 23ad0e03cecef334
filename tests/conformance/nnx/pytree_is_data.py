"""nnx.is_data / nnx.has_data / nnx.register_data_type."""

import jax
import jax.numpy as jnp
import numpy as np
import report
from flax import nnx

values = {
  'int': 1,
  'float': 1.0,
  'np-scalar': np.float32(1),
  'jnp-scalar': jnp.float32(1),
  'jax-array': jnp.ones(1),
  'np-array': np.ones(1),
  'param': nnx.Param(1),
  'rngs': nnx.Rngs(0),
  'key': jax.random.key(0),
  'list-of-array': [jnp.ones(1)],
  'str': 'x',
  'none': None,
  'nnx-list': nnx.List([]),
  'state': nnx.State({}),
}
report.value('is_data', {k: nnx.is_data(v) for k, v in values.items()})
found = nnx.has_data([1, jnp.ones(1), {'a': nnx.Param(2)}])
report.value('has_data-types', [type(x).__name__ for x in found])
report.value('has_data-none', nnx.has_data((1, 'a')))


class Blob:
  pass


report.value('blob-before', nnx.is_data(Blob()))
nnx.register_data_type(Blob)
report.value('blob-after', nnx.is_data(Blob()))
