"""Linen nn.Conv: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.Conv(features=4, kernel_size=(3, 3))
x = jnp.ones((1, 6, 6, 2))
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
