"""NNX nnx.LoRA: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.LoRA(3, 2, 4, rngs=nnx.Rngs(0))
x = jnp.ones((2, 3))
report.tree('state', nnx.state(model))
report.array('y', model(x))
