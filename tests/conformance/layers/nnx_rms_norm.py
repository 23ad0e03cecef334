"""NNX nnx.RMSNorm: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.RMSNorm(4, rngs=nnx.Rngs(0))
x = jnp.arange(8.0).reshape(2, 4)
report.tree('state', nnx.state(model))
report.array('y', model(x))
