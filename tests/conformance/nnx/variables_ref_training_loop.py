"""Ref-mode Variables (nnx.var_defaults(ref=True)) through a jax.jit
training loop: split / with_vars(ref=False) / jax.value_and_grad / merge,
Optimizer.update and a counter written in place, Rngs streams kept in
Refs, and nnx.update writing plain values into the Refs."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import report
from flax import nnx


class Model(nnx.Module):
  def __init__(self, din, dmid, dout, rngs: nnx.Rngs):
    self.linear = nnx.Linear(din, dmid, rngs=rngs)
    self.linear_out = nnx.Linear(dmid, dout, rngs=rngs)
    self.dropout = nnx.Dropout(0.2)
    self.steps = nnx.BatchStat(jnp.array(0))

  def __call__(self, x, rngs=None):
    x = nnx.relu(self.dropout(self.linear(x), rngs=rngs))
    return self.linear_out(x)


with nnx.var_defaults(ref=True):
  model = Model(2, 16, 3, rngs=nnx.Rngs(0))
  optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
  rngs = nnx.Rngs(dropout=1)

kernel_ref = model.linear.kernel.get_raw_value()
report.value(
  'refs',
  [
    model.linear.kernel.ref,
    model.steps.ref,
    optimizer.step.ref,
    rngs.dropout.count.ref,
    type(kernel_ref).__name__,
  ],
)
report.value(
  'state-leaf-types',
  [type(x).__name__ for x in jax.tree.leaves(nnx.state(model))],
)


@jax.jit
def train_step(model, optimizer, rngs, x, y):
  graphdef, params, nondiff = nnx.split(model, nnx.Param, ...)
  key = rngs.dropout()

  def loss_fn(params):
    model = nnx.merge(graphdef, params, nondiff)
    return ((model(x, rngs=nnx.Rngs(dropout=key)) - y) ** 2).mean()

  loss, grads = jax.value_and_grad(loss_fn)(nnx.with_vars(params, ref=False))
  optimizer.update(model, grads)
  model.steps[...] += 1
  return loss


x = np.linspace(-1, 1, 32).reshape(16, 2).astype(np.float32)
y = np.sin(x) @ np.ones((2, 3), np.float32)
report.value(
  'losses', [float(train_step(model, optimizer, rngs, x, y)) for _ in range(5)]
)
report.value(
  'counters',
  [
    int(optimizer.step[...]),
    int(model.steps[...]),
    int(rngs.dropout.count[...]),
  ],
)
report.array('kernel', model.linear.kernel[...])
report.array('adam-mu', optimizer.opt_state[0].mu['linear']['kernel'][...])
report.value(
  'same-refs',
  [
    model.linear.kernel.get_raw_value() is kernel_ref,
    type(model.linear.kernel.get_raw_value()).__name__,
  ],
)
report.array(
  'eval-out',
  jax.jit(lambda m, x: m(x, rngs=nnx.Rngs(dropout=0)))(model, x),
)


@jax.jit
def mutate(model, value):
  print_ref = nnx.variablelib.is_array_ref(model.steps.get_raw_value())
  nnx.update(model, {'steps': value})
  return print_ref


report.value('traced-is-ref', bool(mutate(model, jnp.array(41))))
report.value('update-in-jit', int(model.steps[...]))
nnx.update(model, {'steps': jnp.array(7)})
report.value(
  'update-eager',
  [
    int(model.steps[...]),
    model.steps.ref,
    type(model.steps.get_raw_value()).__name__,
  ],
)
p = nnx.with_vars(nnx.state(model, nnx.Param), ref=False)
report.value(
  'with-vars-state',
  [type(p).__name__, type(p['linear']['kernel'].get_raw_value()).__name__],
)

with nnx.var_defaults(ref=True):
  r = nnx.Rngs(0)
report.array('rng-draw', jax.random.key_data(r()))
report.array('rng-jit-draw', jax.jit(lambda r: jax.random.key_data(r()))(r))
report.value('rng-count', int(r.default.count[...]))
report.value(
  'rng-split-kinds',
  [
    type(r.split(2).default.key.get_raw_value()).__name__,
    r.split(2).default.key.shape,
  ],
)
nnx.reseed(r, default=3)
report.array('rng-reseeded', jax.random.key_data(r()))
