"""A Linen training loop over a model that contains ToLinen layers."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Model(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = bridge.to_linen(nnx.Conv, 3, 4, (2,))(x)
    x = nn.relu(x)
    return nn.Conv(1, (1,))(x)


x = jnp.arange(24.0).reshape(2, 4, 3) / 24
y = jnp.ones((2, 4, 1))
model = Model()
params = model.init(jax.random.key(0), x)['params']


@jax.jit
def step(params):
  def loss_fn(p):
    return jnp.mean((model.apply({'params': p}, x) - y) ** 2)

  loss, grads = jax.value_and_grad(loss_fn)(params)
  return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss


losses = []
for _ in range(4):
  params, loss = step(params)
  losses.append(float(loss))
report.value('losses', losses)
report.tree('params', params)
