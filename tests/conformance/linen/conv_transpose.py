"""Linen nn.ConvTranspose: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.ConvTranspose(features=3, kernel_size=(2, 2), strides=(2, 2))
x = jnp.ones((1, 4, 4, 2))
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
