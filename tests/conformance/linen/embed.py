"""Linen nn.Embed: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.Embed(num_embeddings=5, features=3)
x = jnp.array([[0, 4, 2]])
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
