"""bridge.ToNNX inside an NNX model: training steps under nnx.jit."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Model(nnx.Module):
  def __init__(self, rngs):
    self.conv = bridge.ToNNX(nn.Conv(4, (3,)), rngs=rngs)
    self.norm = bridge.ToNNX(nn.LayerNorm(), rngs=rngs)
    self.head = nnx.Conv(4, 1, (1,), rngs=rngs)

  def __call__(self, x):
    return self.head(nn.relu(self.norm(self.conv(x))))


x = jnp.arange(24.0).reshape(2, 4, 3) / 24
y = jnp.ones((2, 4, 1))
model = bridge.lazy_init(Model(nnx.Rngs(0)), x)


@nnx.jit
def step(model, x, y):
  def loss_fn(model):
    return jnp.mean((model(x) - y) ** 2)

  loss, grads = nnx.value_and_grad(loss_fn)(model)
  params = nnx.state(model, nnx.Param)
  nnx.update(model, jax.tree.map(lambda p, g: p - 0.05 * g, params, grads))
  return loss


report.value('losses', [float(step(model, x, y)) for _ in range(3)])
report.tree('params', nnx.state(model, nnx.Param))
