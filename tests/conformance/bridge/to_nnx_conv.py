"""bridge.ToNNX(nn.Conv): lazy init from Rngs, state tree, outputs."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

model = bridge.ToNNX(nn.Conv(4, (3, 3)), rngs=nnx.Rngs(0))
report.value(
  'before init', sorted(k for k in vars(model) if k in ('kernel', 'bias'))
)
bridge.lazy_init(model, jnp.ones((1, 5, 5, 2)))
report.tree('params', nnx.state(model, nnx.Param))
report.tree('rng state', nnx.state(model, nnx.RngState))
x = jnp.arange(50.0).reshape(1, 5, 5, 2) / 50
report.array('y', model(x))
report.tree('rng state after call', nnx.state(model, nnx.RngState))
