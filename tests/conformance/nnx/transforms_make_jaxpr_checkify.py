"""nnx.make_jaxpr (graph_updates=False) and nnx.checkify."""

import jax.numpy as jnp
import report
from flax import nnx
from jax.experimental import checkify


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.c = nnx.BatchStat(jnp.zeros(()))


m = M()


def f(m, x):
  m.c[...] += 1
  return m.w[...] * x


with report.raises('needs graph_updates=False'):
  nnx.make_jaxpr(f)(m, 2.0)
jaxpr = nnx.make_jaxpr(f, graph_updates=False)(m, 2.0)
report.value('invars', [list(v.aval.shape) for v in jaxpr.jaxpr.invars])
report.value('outvars', [list(v.aval.shape) for v in jaxpr.jaxpr.outvars])
report.array('c-untouched', m.c[...])
g = nnx.make_jaxpr(static_argnums=1, graph_updates=False)(
  lambda m, n: m.w[...] * n
)
report.value('static-invars', len(g(m, 3).jaxpr.invars))


def h(m, x):
  checkify.check(x > 0, 'x must be positive')
  m.c[...] += 1
  return m.w[...] * x


for graph in (True, False):
  err, out = nnx.checkify(h, graph=graph)(m, 1.0)
  report.value(f'ok-{graph}', err.get())
  err, out = nnx.checkify(h, graph=graph)(m, -1.0)
  report.value(f'err-{graph}', err.get())
  report.array(f'out-{graph}', out)
report.array('c-after', m.c[...])
