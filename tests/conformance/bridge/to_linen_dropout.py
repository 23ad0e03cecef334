"""bridge.to_linen(nnx.Dropout): masks from the Linen dropout stream."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import bridge

model = bridge.to_linen(nnx.Dropout, 0.5)
x = jnp.ones((3, 6))
variables = model.init(
  {'params': jax.random.key(0), 'dropout': jax.random.key(1)}, x
)
report.tree('variables', variables)
report.array(
  'key 2',
  model.apply(variables, x, rngs={'dropout': jax.random.key(2)}),
  exact=True,
)
report.array(
  'key 3',
  model.apply(variables, x, rngs={'dropout': jax.random.key(3)}),
  exact=True,
)
report.array('no rngs', model.apply(variables, x), exact=True)
det = bridge.to_linen(nnx.Dropout, 0.5, deterministic=True)
report.array(
  'deterministic',
  det.apply({}, x, rngs={'dropout': jax.random.key(2)}),
  exact=True,
)
