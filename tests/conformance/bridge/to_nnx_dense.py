"""bridge.ToNNX(nn.Dense) and a Linen MLP: trees, values, train step."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

dense = bridge.ToNNX(nn.Dense(3), rngs=nnx.Rngs(0))
x = jnp.arange(8.0).reshape(2, 4) / 8
bridge.lazy_init(dense, x)
report.tree('dense state', nnx.state(dense))
report.array('dense y', dense(x))


class MLP(nn.Module):
  @nn.compact
  def __call__(self, x, train: bool = True):
    x = nn.Dense(8)(x)
    x = nn.BatchNorm(use_running_average=not train)(x)
    x = nn.Dropout(0.3, deterministic=not train)(x)
    return nn.Dense(2, name='head')(nn.relu(x))


model = bridge.ToNNX(MLP(), rngs=nnx.Rngs(params=1, dropout=2))
bridge.lazy_init(model, x)
report.tree('mlp params', nnx.state(model, nnx.Param))
optimizer_lr = 0.1


@nnx.jit
def step(model, x, y):
  def loss_fn(model):
    out = model(x, mutable=['batch_stats'])
    return jnp.mean((out - y) ** 2)

  loss, grads = nnx.value_and_grad(loss_fn)(model)
  params = nnx.state(model, nnx.Param)
  nnx.update(
    model, jax.tree.map(lambda p, g: p - optimizer_lr * g, params, grads)
  )
  return loss


y = jnp.ones((2, 2))
report.value('losses', [float(step(model, x, y)) for _ in range(3)])
report.tree('batch stats', nnx.state(model, nnx.BatchStat))
report.array('eval', model(x, train=False))
