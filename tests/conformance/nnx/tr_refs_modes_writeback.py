"""jax.Refs through graph-mode transforms (one Ref passed twice, a Module's
Ref returned), Variable metadata and structure written back, and the
graph modes a decorator transform keeps."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Box(nnx.Module):
  def __init__(self, r):
    self.r = nnx.data(r)


r = jax.new_ref(jnp.array(1.0))


def add_to_first(a, b):
  a[...] += 10.0
  return b[...], b


value, same = nnx.jit(add_to_first)(r, r)
report.value('jit same ref twice', [float(value), same is r, float(r[...])])
box = Box(r)
report.value('jit module ref returned', nnx.jit(lambda b: b.r)(box) is r)
report.value(
  'jit ref as argument and attribute',
  float(nnx.jit(lambda b, a: b.r[...] + a[...])(box, r)),
)
with report.raises('jit new ref without graph node arguments'):
  nnx.jit(lambda x: jax.new_ref(x))(jnp.ones(()))
with report.raises('jit ref returned without graph updates'):
  nnx.jit(lambda a, b: a, graph_updates=False)(r, r)


def bump(b, x):
  b.r[...] += 1.0
  return x * b.r[...]


report.value('cond module ref', float(nnx.cond(True, bump, bump, box, 2.0)))
report.value(
  'cond ref returned', nnx.cond(False, lambda b: b.r, lambda b: b.r, box) is r
)
report.value('after', float(r[...]))


def set_meta(m):
  m.w.set_metadata(foo='bar')
  m.w[...] = m.w[...] + 1


for name in ['vmap', 'grad', 'cond', 'remat', 'jit']:
  m = nnx.Module()
  m.w = nnx.Param(jnp.ones(2), foo='orig')
  if name == 'vmap':
    nnx.vmap(lambda m, x: set_meta(m), in_axes=(None, 0))(m, jnp.ones(3))
  elif name == 'grad':
    nnx.grad(lambda m: (set_meta(m), jnp.sum(m.w[...]))[1])(m)
  elif name == 'cond':
    nnx.cond(True, set_meta, set_meta, m)
  elif name == 'remat':
    nnx.remat(set_meta)(m)
  else:
    nnx.jit(set_meta)(m)
  report.value(
    f'{name} metadata', [m.w.get_metadata()['foo'], m.w[...].tolist()]
  )

m = nnx.Module()
m.w = nnx.Param(jnp.ones(2))


def grow(m, x):
  m.b = nnx.Param(jnp.zeros(2))
  m.w = nnx.Param(m.w[...] * 2)
  return x


nnx.vmap(grow, in_axes=(None, 0))(m, jnp.arange(3.0))
report.tree('vmap broadcast input grown', nnx.state(m))


def grow_loss(m):
  m.extra = nnx.Param(jnp.ones(1))
  return jnp.sum(m.w[...])


made_outside = nnx.grad(grow_loss)
with nnx.set_graph_mode(False):
  made_inside = nnx.grad(grow_loss)
  m = nnx.Module()
  m.w = nnx.Param(jnp.ones(2))
  report.value('grad made in graph mode', type(made_outside(m)).__name__)
  report.value('grows', hasattr(m, 'extra'))
m = nnx.Module()
m.w = nnx.Param(jnp.ones(2))
report.value('grad made in tree mode', type(made_inside(m)).__name__)
report.value('does not grow', hasattr(m, 'extra'))
with report.raises('cond branches differ'):
  nnx.cond(True, lambda x: x, lambda x: x[0], jnp.ones(3))
with report.raises('grad argnums past the arguments'):
  nnx.grad(lambda a, b: a + b, argnums=2)(jnp.ones(()), jnp.ones(()))
with report.raises('vmap in_axes too long'):
  nnx.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(jnp.ones(3), jnp.ones(3))
