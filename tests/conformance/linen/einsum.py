"""Linen nn.Einsum: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.Einsum((5, 3, 4), 'abc,cde->abde')
x = jnp.ones((2, 3, 5))
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
