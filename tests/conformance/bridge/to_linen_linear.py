"""bridge.to_linen(nnx.Linear) inside a Linen model: init, apply, training."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

layer = bridge.to_linen(nnx.Linear, 4, 3)
x = jnp.arange(8.0).reshape(2, 4) / 8
variables = layer.init(jax.random.key(0), x)
report.tree('linear', variables)
report.array('linear y', layer.apply(variables, x))


class Model(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = bridge.to_linen(nnx.Linear, 4, 8, name='l1')(x)
    x = nn.relu(x)
    x = bridge.to_linen(nnx.BatchNorm, 8, use_running_average=False)(x)
    return nn.Dense(2)(x)


model = Model()
variables = model.init(jax.random.key(1), x)
report.tree('model', variables)
y, updates = model.apply(variables, x, mutable=['batch_stats'])
report.array('model y', y)
report.tree('model updates', updates)


@jax.jit
def step(params, batch_stats):
  def loss_fn(p):
    out, upd = model.apply(
      {'params': p, 'batch_stats': batch_stats}, x, mutable=['batch_stats']
    )
    return jnp.mean((out - 1.0) ** 2), upd

  (loss, upd), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
  params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
  return params, upd['batch_stats'], loss


params, stats = variables['params'], variables['batch_stats']
losses = []
for _ in range(3):
  params, stats, loss = step(params, stats)
  losses.append(float(loss))
report.value('losses', losses)
report.tree('trained', params)
