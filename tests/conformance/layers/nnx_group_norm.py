"""NNX nnx.GroupNorm: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.GroupNorm(8, num_groups=2, rngs=nnx.Rngs(0))
x = jnp.arange(16.0).reshape(1, 2, 8)
report.tree('state', nnx.state(model))
report.array('y', model(x))
