"""NNX nnx.ConvTranspose: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.ConvTranspose(
  2, 3, kernel_size=(2, 2), strides=(2, 2), rngs=nnx.Rngs(0)
)
x = jnp.ones((1, 3, 3, 2))
report.tree('state', nnx.state(model))
report.array('y', model(x))
