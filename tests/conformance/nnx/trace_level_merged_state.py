"""A State passed into jax.jit and merged inside jax.grad / vmap / scan /
cond, then mutated: TraceContextError; mutation at the right level, Ref
values and NNX transforms keep working; graph and tree mode."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.c = nnx.Variable(jnp.array(0))


for graph in (True, False):
  gd, st = nnx.split(M(), graph=graph)

  @jax.jit
  def f(st, x):
    def loss(x):
      m = nnx.merge(gd, st)
      m.c[...] += 1
      return x * 2.0

    return jax.grad(loss)(x)

  with report.raises(f'grad inside jit graph={graph}'):
    f(st, 1.0)
  try:
    f(st, 1.0)
  except Exception as e:
    report.text(f'message graph={graph}', str(e).split(' (')[0].split(':')[0])

gd, st = nnx.split(M())


def bump():
  nnx.merge(gd, st).c[...] += 1


with report.raises('scan closure'):
  jax.jit(lambda st, xs: jax.lax.scan(lambda c, x: (bump(), (c, x))[1], 0, xs))(
    st, jnp.ones(3)
  )
with report.raises('vmap closure'):
  jax.jit(lambda st, xs: jax.vmap(lambda x: (bump(), x)[1])(xs))(
    st, jnp.ones(3)
  )
with report.raises('cond closure'):
  jax.jit(lambda st, p: jax.lax.cond(p, lambda: (bump(), 1)[1], lambda: 0))(
    st, True
  )


@jax.jit
def carried(st, xs):
  def body(st, x):
    m = nnx.merge(gd, st)
    m.c[...] += 1
    return nnx.state(m), x

  return jax.lax.scan(body, st, xs)[0]


report.tree('scan carry', carried(st, jnp.ones(3)))


@jax.jit
def operand(st, p):
  def t(st):
    nnx.merge(gd, st).c[...] += 1
    return 1

  return jax.lax.cond(p, t, lambda st: 0, st)


report.array('cond operand', operand(st, True))

v = nnx.Variable(jnp.array(0), foo=1)
for label, fn in [
  ('copy captured', lambda: v.copy().__setitem__(..., 1)),
  ('set_value', lambda: v.set_value(jnp.array(1))),
  ('set_metadata', lambda: v.set_metadata('foo', 2)),
  ('setattr metadata', lambda: setattr(v, 'foo', 2)),
]:
  c = v.copy()
  with report.raises(label):
    jax.jit(
      lambda: fn() if label != 'copy captured' else c.__setitem__(..., 1)
    )()

r = nnx.Variable(jnp.array(0), ref=True)


def g(x):
  def loss(x):
    r[...] += 1
    return x

  return jax.grad(loss)(x)


report.array('ref inside grad', jax.jit(g)(1.0))
report.array('ref value', r[...])


@jax.jit
def h(st, x):
  m = nnx.merge(gd, st)

  def loss(x):
    m.y = 1
    return x

  return jax.grad(loss)(x)


with report.raises('module setattr'):
  h(st, 1.0)

m = M()


@nnx.jit
def nj(m):
  def loss(m, x):
    m.c[...] += 1
    return x * 2.0

  return nnx.grad(loss, argnums=1)(m, 1.0)


report.array('nnx.jit grad', nj(m))
report.array('nnx counter', m.c[...])
