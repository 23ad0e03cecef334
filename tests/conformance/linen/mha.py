"""Linen nn.MultiHeadDotProductAttention: parameter tree and outputs for a fixed seed."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4)
x = jnp.ones((1, 3, 4))
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
