"""Linen nn.ConvLocal: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.ConvLocal(features=2, kernel_size=(3,))
x = jnp.ones((1, 5, 2))
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
