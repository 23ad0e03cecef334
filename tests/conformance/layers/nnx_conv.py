"""NNX nnx.Conv: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.Conv(2, 4, kernel_size=(3, 3), rngs=nnx.Rngs(0))
x = jnp.ones((1, 5, 5, 2))
report.tree('state', nnx.state(model))
report.array('y', model(x))
