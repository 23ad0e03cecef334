"""nnx.EMA.apply_to: the model it returns evaluates with the averages as
ema.update moves them (under nnx.jit and eagerly), shares the EMA's
Variables and the model's other Variables, and rejects another structure."""

import jax.numpy as jnp
import optax
import report
from flax import nnx

rngs = nnx.Rngs(0)
model = nnx.Sequential(nnx.Linear(2, 8, rngs=rngs), nnx.Linear(8, 8, rngs=rngs))
x, y = rngs.normal((32, 2)), rngs.normal((32, 8))


def loss_fn(m, x, y):
  return jnp.mean((m(x) - y) ** 2)


optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
ema = nnx.EMA(model, decay=0.9)
ema_model = ema.apply_to(model)
report.array('ema model loss before', loss_fn(ema_model, x, y))


@nnx.jit
def train_step(model, optimizer, ema, x, y):
  loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
  optimizer.update(model, grads)
  ema.update(model)
  return loss


for step in range(20):
  train_step(model, optimizer, ema, x, y)
  if step in (0, 9):
    report.array(f'ema model loss after {step + 1}', loss_fn(ema_model, x, y))
report.array('ema model loss', loss_fn(ema_model, x, y))
report.array('model loss', loss_fn(model, x, y))
report.tree('ema model state', nnx.state(ema_model))
report.value(
  'identities',
  [
    ema_model.layers[0].kernel is ema.params['layers'][0]['kernel'],
    ema_model.layers[0].kernel is model.layers[0].kernel,
    ema.apply_to(model).layers[1].bias is ema_model.layers[1].bias,
  ],
)


class Net(nnx.Module):
  def __init__(self, rngs):
    self.lin = nnx.Linear(2, 3, rngs=rngs)
    self.bn = nnx.BatchNorm(3, rngs=rngs)
    self.count = nnx.Variable(jnp.array(0))
    self.tied = self.lin.kernel

  def __call__(self, x):
    return self.bn(self.lin(x))


net = Net(nnx.Rngs(0))
only = nnx.EMA(net, decay=0.5, only=nnx.Param)
applied = only.apply_to(net)
report.value(
  'only Param identities',
  [
    type(applied).__name__,
    applied is net,
    applied.lin is net.lin,
    applied.lin.kernel is only.params['lin']['kernel'],
    applied.tied is applied.lin.kernel,
    applied.bn.mean is net.bn.mean,
    applied.count is net.count,
  ],
)
applied(jnp.arange(8.0).reshape(4, 2))
report.array('batch stats reach the model', net.bn.mean[...])
net.lin.kernel[...] = net.lin.kernel[...] * 3.0
only.update(net)
report.array('eager update seen', applied.lin.kernel[...])
only.update(nnx.state(net))
report.array('state update seen', applied.lin.kernel[...])
jitted = nnx.jit(lambda e, m: e.apply_to(m))(only, net)
report.value(
  'apply_to under jit',
  [
    jitted.lin.kernel is only.params['lin']['kernel'],
    jitted.bn.mean is net.bn.mean,
  ],
)
report.array(
  'apply_to under jit evaluates',
  nnx.jit(lambda e, m, x: e.apply_to(m)(x))(only, net, jnp.ones((4, 2))),
)
report.text('ema repr', repr(only))

small = nnx.EMA(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), decay=0.9)
with report.raises('fewer leaves'):
  small.apply_to(nnx.Linear(2, 3, use_bias=False, rngs=nnx.Rngs(0)))
with report.raises('other paths'):
  small.apply_to(nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0))))
with report.raises('tree mode duplicates'):
  nnx.EMA(Net(nnx.Rngs(0)), decay=0.9, graph=False)
