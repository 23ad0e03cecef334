"""Linen nn.LayerNorm: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.LayerNorm()
x = jnp.arange(12.0).reshape(3, 4)
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
