"""Module.sow + nnx.capture in a train step, as the guide on extracting
intermediates does: capture inside nnx.jit with nnx.value_and_grad
(has_aux) and an optimizer; what nnx.state / nnx.split / nnx.pop see
after the capture and while it runs (the ``__captures__`` buffers, which
an Intermediate filter matches); the functional API (split, jax.jit,
merge, update) inside a capture; gradients w.r.t. perturbations in the
same step."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, din, dout, rngs):
    self.linear = nnx.Linear(din, dout, rngs=rngs)
    self.bn = nnx.BatchNorm(dout, rngs=rngs)

  def __call__(self, x):
    x = self.linear(x)
    self.sow(nnx.Intermediate, 'features', x)
    x = self.perturb('grad_of_features', x)
    return nnx.relu(self.bn(x))


class Model(nnx.Module):
  def __init__(self, rngs):
    self.block1 = Block(2, 4, rngs)
    self.block2 = Block(4, 1, rngs)

  def __call__(self, x):
    y = self.block2(self.block1(x))
    self.sow(nnx.Intermediate, 'out_mean', y.mean())
    return y


rngs = nnx.Rngs(0)
model = Model(rngs)
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
x, y = rngs.normal((8, 2)), rngs.normal((8, 1))


@nnx.jit
def train_step(model, optimizer, x, y):
  def loss_fn(model):
    y_pred, intms = nnx.capture(model, nnx.Intermediate)(x)
    return jnp.mean((y_pred - y) ** 2), intms

  (loss, intms), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
  optimizer.update(model, grads)
  return loss, intms


for step in range(3):
  loss, intms = train_step(model, optimizer, x, y)
  report.value(f'loss-{step}', float(loss))
report.tree('intermediates', intms)
report.tree('params', nnx.state(model, nnx.Param))
report.text(
  'state-intermediate-after', repr(nnx.state(model, nnx.Intermediate))
)
_, inter, rest = nnx.split(model, nnx.Intermediate, ...)
report.text('split-intermediate-after', repr(inter))
report.value('split-rest-leaves', len(jax.tree.leaves(rest)))
report.text('pop-after', repr(nnx.pop(model, nnx.Intermediate)))


def during(model, x):
  state = nnx.state(model, nnx.Intermediate)
  report.value(
    'during-intermediate-paths',
    [list(map(str, p)) for p in nnx.to_flat_state(state).paths],
  )
  report.text('during-block1-linear', repr(state['block1']['linear']))
  with report.raises('during-split-without-intermediate'):
    nnx.split(model, nnx.Param, nnx.BatchStat)
  graphdef, params, inter, rest = nnx.split(
    model, nnx.Param, nnx.Intermediate, ...
  )

  @jax.jit
  def forward(params, inter, rest, x):
    m = nnx.merge(graphdef, params, inter, rest)
    y = m(x)
    return y, nnx.state(m, nnx.Intermediate)

  out, inter = forward(params, inter, rest, x)
  nnx.update(model, inter)
  return out


out, inter, perts = nnx.capture(during, nnx.Intermediate, nnx.Perturbation)(
  model, x
)
report.array('functional-out', out)
report.tree('functional-intermediates', inter)
report.value('functional-perturbations', len(perts))
report.value('functional-left', hasattr(model.block1, '__captures__'))

_, perturbations = nnx.capture(model, nnx.Perturbation)(x)


@nnx.jit
def perturbation_step(model, perturbations, x, y):
  def loss(model, perturbations):
    y_pred, intms = nnx.capture(model, nnx.Intermediate, init=perturbations)(x)
    return jnp.mean((y_pred - y) ** 2), intms

  (value, intms), (_, pgrads) = nnx.value_and_grad(
    loss, argnums=(0, 1), has_aux=True
  )(model, perturbations)
  return value, pgrads, intms


value, pgrads, intms = perturbation_step(model, perturbations, x, y)
report.value('perturbation-loss', float(value))
report.tree('perturbation-grads', pgrads)
report.tree('perturbation-step-intermediates', intms)
