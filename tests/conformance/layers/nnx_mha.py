"""NNX nnx.MultiHeadAttention: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.MultiHeadAttention(
  num_heads=2, in_features=4, qkv_features=4, decode=False, rngs=nnx.Rngs(0)
)
x = jnp.ones((1, 3, 4))
report.tree('state', nnx.state(model))
report.array('y', model(x))
