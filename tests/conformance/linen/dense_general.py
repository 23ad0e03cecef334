"""Linen nn.DenseGeneral: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.DenseGeneral(features=(2, 3), axis=-1)
x = jnp.ones((2, 4))
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
