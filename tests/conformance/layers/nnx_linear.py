"""NNX nnx.Linear: state tree and outputs for a fixed seed."""

import jax.numpy as jnp
import report
from flax import nnx

model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
x = jnp.arange(6.0).reshape(2, 3)
report.tree('state', nnx.state(model))
report.array('y', model(x))
