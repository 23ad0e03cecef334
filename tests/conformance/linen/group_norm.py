"""Linen nn.GroupNorm: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.GroupNorm(num_groups=2)
x = jnp.arange(16.0).reshape(1, 2, 8)
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
