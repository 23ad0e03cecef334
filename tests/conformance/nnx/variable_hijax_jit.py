"""Hijax Variables as jax.jit arguments and closures: in-place updates
inside a transform are visible outside; control flow, creation inside
jit, grad of other arguments, vmap of closures, the jaxpr."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

v = nnx.Param(jnp.ones(3), hijax=True)


@jax.jit
def f(v):
  report.value(
    'inside',
    [isinstance(v, nnx.Variable), isinstance(v, nnx.Param), v.hijax],
  )
  v[...] = v[...] + 1
  return v[...] * 2


report.array('out', f(v))
report.array('after', v[...])
report.array('out-again', f(v))
report.array('after-again', v[...])


@jax.jit
def g(v):
  v.set_value(v.get_value() * 3)
  v[0] = 7.0
  return v + 1, 1 + v, jnp.asarray(v) * 1, len(v)


for i, out in enumerate(g(v)):
  report.array(f'methods-{i}', out)
report.array('after-methods', v[...])


@jax.jit
def scale():
  v[...] = v[...] * 10


scale()
report.array('closure', v[...])


def body(i, _):
  v[...] = v[...] + 1


jax.jit(lambda: jax.lax.fori_loop(0, 3, body, None))()
report.array('fori', v[...])
report.array(
  'cond',
  jax.jit(lambda p: jax.lax.cond(p, lambda: v[...] * 1, lambda: v[...] * 2))(
    False
  ),
)


@jax.jit
def make(x):
  w = nnx.BatchStat(x, hijax=True)
  w[...] += 3
  return w[...]


report.array('created-inside', make(jnp.ones(2)))
report.array(
  'grad-other', jax.grad(lambda x, v: (x * v[...]).sum())(jnp.ones(3), v)
)
report.array('vmap-closure', jax.vmap(lambda x: x * v[...])(jnp.ones((2, 3))))
report.value('eval_shape', str(jax.eval_shape(lambda v: v[...] * 2, v)))
w = nnx.Param(jnp.ones(2), hijax=True)


def step(w):
  w[...] = w[...] * 2


report.text('jaxpr', str(jax.make_jaxpr(step)(w)))
