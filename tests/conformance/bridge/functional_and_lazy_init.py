"""bridge.functional / Functional, and lazy_init of a model with wrappers."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

f = bridge.functional(nnx.Conv)(3, 2, (2,))
report.value('graphdef before', f.graphdef is None)
report.value('args', list(f.args))
state = f.init(rngs=nnx.Rngs(0))
report.tree('state', state)
x = jnp.arange(12.0).reshape(1, 4, 3) / 12
y, (graphdef, new_state) = f.apply(state)(x)
report.array('y', y)
report.tree('new state', new_state)


class Two(nnx.Module):
  def __init__(self, rngs):
    self.a = bridge.ToNNX(nn.Conv(4, (2,)), rngs=rngs)
    self.b = bridge.ToNNX(nn.Conv(2, (1,)), rngs=rngs)

  def __call__(self, x):
    return self.b(nn.relu(self.a(x)))


model = Two(nnx.Rngs(1))
report.value('returned', bridge.lazy_init(model, x) is model)
report.tree('params', nnx.state(model, nnx.Param))
report.array('out', model(x))
