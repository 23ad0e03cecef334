"""nn.Dense: parameter tree, outputs and a shape error."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jnp.arange(6.0).reshape(2, 3)
model = nn.Dense(4)
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
report.array('y-batched', model.apply(variables, jnp.ones((2, 5, 3))))
report.text('repr', repr(model))
with report.raises('wrong input features'):
  model.apply(variables, jnp.ones((2, 5)))
