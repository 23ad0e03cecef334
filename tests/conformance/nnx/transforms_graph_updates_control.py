"""graph_updates on nnx.cond / switch / while_loop / fori_loop / eval_shape."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.c = nnx.BatchStat(jnp.zeros(()))


def up(m):
  m.c[...] += 1
  return m.w[...] * 2


def down(m):
  m.c[...] -= 1
  return m.w[...] * 3


for gu in (True, False):
  for graph in (True, False):
    m = M()
    y = nnx.cond(False, up, down, m, graph=graph, graph_updates=gu)
    report.array(f'cond-{gu}-{graph}', y)
    report.array(f'cond-c-{gu}-{graph}', m.c[...])
    m = M()
    y = nnx.switch(1, (down, up), m, graph=graph, graph_updates=gu)
    report.array(f'switch-c-{gu}-{graph}', m.c[...])


def add(m):
  m.extra = nnx.Param(jnp.zeros(1))
  return m.w[...]


for gu in (True, False):
  m = M()
  nnx.cond(True, add, add, m, graph_updates=gu)
  report.value(f'struct-{gu}', hasattr(m, 'extra'))


def body(i, m):
  m.c[...] += i
  return m


for gu in (True, False):
  m = M()
  out = nnx.fori_loop(0, 4, body, m, graph_updates=gu)
  report.value(f'fori-same-{gu}', out is m)
  report.array(f'fori-c-{gu}', m.c[...])
  m = M()

  def wbody(m):
    m.c[...] += 1
    return m

  out = nnx.while_loop(lambda m: m.c[...] < 3, wbody, m, graph_updates=gu)
  report.value(f'while-same-{gu}', out is m)
  report.array(f'while-c-{gu}', m.c[...])
  abstract = nnx.eval_shape(lambda: M(), graph_updates=gu)
  report.value(f'eval-shape-{gu}', list(abstract.w.shape))
