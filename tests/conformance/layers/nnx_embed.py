"""NNX nnx.Embed: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.Embed(num_embeddings=6, features=3, rngs=nnx.Rngs(0))
x = jnp.array([[1, 5, 0]])
report.tree('state', nnx.state(model))
report.array('y', model(x))
