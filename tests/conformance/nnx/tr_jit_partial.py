"""nnx.jit_partial and nnx.cached_partial: bound modules updated in place."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(3.0))
    self.n = nnx.BatchStat(jnp.array(0))


def step(m, x):
  m.n[...] += 1
  m.w[...] = m.w[...] + x
  return m.w[...].sum()


m = M()
g = nnx.cached_partial(nnx.jit(step), m)
ys = [g(1.0) for _ in range(3)]
report.array('cached-ys', jnp.stack(ys))
report.tree('cached-state', nnx.state(m))

m = M()
g = nnx.jit_partial(step, m, graph_updates=False)
ys = [g(jnp.array(2.0)) for _ in range(2)]
report.array('jp-ys', jnp.stack(ys))
report.tree('jp-state', nnx.state(m))

m = M()
g = nnx.jit_partial(step, m, graph=False)
ys = [g(0.5) for _ in range(2)]
report.array('jp-tree-ys', jnp.stack(ys))
report.tree('jp-tree-state', nnx.state(m))


def two(m1, m2, x):
  m2.n[...] += 2
  return m1.w[...] * x + m2.w[...]


a, b = M(), M()
g = nnx.cached_partial(nnx.jit(two), a, b)
report.array('two-1', g(2.0))
report.array('two-2', g(3.0))
report.array('two-n', b.n[...])
report.array('two-a-n', a.n[...])

m = M()
g = nnx.jit_partial(step, m, graph_updates=False, static_argnames=())
report.array('jp-kw', g(x=1.0))
