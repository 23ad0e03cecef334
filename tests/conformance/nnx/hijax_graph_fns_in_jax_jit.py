"""NNX graph functions on hijax Variables inside plain JAX transforms
(jax.jit, jax.eval_shape): nnx.state / split / merge / update / pop /
clone see the traced Variables, updates are visible outside, an
nnx.Optimizer step runs inside jax.jit, and mutable=False is metadata only."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2), hijax=True)
    self.b = nnx.Param(jnp.zeros(2), hijax=True, tag='b')
    self.c = nnx.BatchStat(jnp.zeros(()), hijax=True)


def type_names(tree):
  return {k: type(v).__name__ for k, v in tree.items()}


m = Model()
outside_graphdef = nnx.graphdef(m)


@jax.jit
def inspect(m):
  state = nnx.state(m)
  report.value('state-types', type_names(state))
  report.text('state-repr', repr(state))
  graphdef, params, rest = nnx.split(m, nnx.Param, ...)
  report.value(
    'split',
    [
      sorted(params.keys()),
      sorted(rest.keys()),
      params['w'] is m.w,
      rest['c'] is m.c,
      graphdef == outside_graphdef,
    ],
  )
  report.value('filters', sorted(nnx.state(m, nnx.BatchStat).keys()))
  report.value('metadata', [m.b.tag, m.w.hijax, isinstance(m.c, nnx.BatchStat)])
  with report.raises('shape'):
    m.w.shape
  merged = nnx.merge(graphdef, params, rest)
  report.value('merge-same', [merged.w is m.w, merged.c is m.c])
  fresh = nnx.merge(graphdef, jax.tree.map(lambda x: x[...] * 5, params), rest)
  report.value('merge-arrays', [fresh.w is m.w, fresh.w.hijax])
  fresh.w[...] = fresh.w[...] + 1
  nnx.update(m, jax.tree.map(lambda x: x[...] * 3, params))
  m.c[...] = (m.w[...] * 2 + m.b[...]).sum()
  copy = nnx.clone(m)
  copy.w[...] = jnp.zeros(2)
  return m.w[...], fresh.w[...]


w, fresh = inspect(m)
report.array('returned-w', w)
report.array('returned-fresh', fresh)
report.array('w-after', m.w[...])
report.array('c-after', m.c[...])
report.value(
  'eval_shape-state',
  type_names(jax.eval_shape(lambda m: nnx.state(m), m)),
)

closed = Model()


@jax.jit
def step_closure():
  state = nnx.state(closed)
  report.value('closure-types', type_names(state))
  nnx.update(closed, jax.tree.map(lambda x: x[...] + 1, state))


step_closure()
report.array('closure-w', closed.w[...])
report.array('closure-c', closed.c[...])


@jax.jit
def pop_inside(m):
  popped = nnx.pop(m, nnx.BatchStat)
  report.value('pop-inside', [sorted(popped.keys()), hasattr(m, 'c')])


pop_inside(m)
report.value('pop-eager', sorted(nnx.pop(m, nnx.BatchStat).keys()))

model = Model()
optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)


@jax.jit
def train_step(model, optimizer):
  graphdef, params, rest = nnx.split(model, nnx.Param, ...)

  def loss_fn(params):
    m = nnx.merge(graphdef, params, rest)
    return (m.w[...] * 2 + m.b[...]).sum()

  grads = jax.grad(loss_fn)(nnx.with_vars(params, hijax=False))
  optimizer.update(model, grads)


train_step(model, optimizer)
train_step(model, optimizer)
report.array('adam-w', model.w[...])
report.array('adam-b', model.b[...])

model = Model()
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)


@jax.jit
def own_state_step(model, optimizer):
  optimizer.update(model, nnx.state(model, nnx.Param))


own_state_step(model, optimizer)
report.array('sgd-w', model.w[...])
report.array('sgd-b', model.b[...])

model = Model()
with nnx.var_defaults(hijax=True):
  optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
train_step(model, optimizer)
train_step(model, optimizer)
report.array('hijax-optimizer-w', model.w[...])
report.array('hijax-optimizer-step', optimizer.step[...])
report.array('hijax-optimizer-mu', optimizer.opt_state[0].mu['w'][...])

# ``mutable=False`` is metadata only: the Variable is still updated inside
frozen = nnx.Param(jnp.ones(2), hijax=True, mutable=False)
jax.jit(lambda v: v.set_value(jnp.zeros(3)))(frozen)
report.array('mutable-false-update', frozen[...])
report.value('mutable-false-metadata', frozen.get_metadata('mutable'))
with report.raises('grad-wrt-hijax'):
  jax.grad(lambda v: (v[...] ** 2).sum())(nnx.Param(jnp.ones(2), hijax=True))
