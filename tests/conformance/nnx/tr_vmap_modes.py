"""nnx.vmap in graph and tree mode, graph_updates on/off, axis_name, out_axes."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(8.0).reshape(4, 2))
    self.n = nnx.BatchStat(jnp.zeros(4))


def f(m, x):
  m.n[...] += 1.0
  m.w[...] = m.w[...] * 2
  return jax.lax.psum(m.w[...] * x, 'b'), m.w[...].sum()


x = jnp.arange(8.0).reshape(4, 2)
for graph in (True, False):
  for gu in (True, False):
    m = M()
    y, s = nnx.vmap(f, axis_name='b', graph=graph, graph_updates=gu)(m, x)
    report.array(f'y-{graph}-{gu}', y)
    report.array(f's-{graph}-{gu}', s)
    report.tree(f'state-{graph}-{gu}', nnx.state(m))

y = nnx.vmap(lambda a: a * 2, axis_size=3, in_axes=None, out_axes=0)(
  jnp.ones(2)
)
report.array('axis-size', y)


def returns_m(m):
  m.n[...] += 5.0
  return m


m = M()
out = nnx.vmap(returns_m)(m)
report.value('ret-same', out is m)
report.array('ret-n', out.n[...])
report.array('orig-n', m.n[...])
