"""NNX nnx.Einsum: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.Einsum('abc,cde->abde', (5, 3, 4), rngs=nnx.Rngs(0))
x = jnp.ones((2, 3, 5))
report.tree('state', nnx.state(model))
report.array('y', model(x))
