"""nnx.jit: in-place updates in graph and tree mode, graph_updates on/off."""

import jax.numpy as jnp
import report
from flax import nnx


class Counter(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(3.0))
    self.count = nnx.BatchStat(jnp.array(0))


def step(m, x):
  m.count[...] += 1
  m.w[...] = m.w[...] * x
  return m.w[...].sum()


for graph in (True, False):
  for gu in (True, False):
    m = Counter()
    f = nnx.jit(step, graph=graph, graph_updates=gu)
    ys = [f(m, 2.0) for _ in range(3)]
    report.array(f'ys-{graph}-{gu}', jnp.stack(ys))
    report.tree(f'state-{graph}-{gu}', nnx.state(m))


def returns_module(m):
  m.count[...] += 10
  return m


m = Counter()
out = nnx.jit(returns_module)(m)
report.value('same-object', out is m)
report.array('out-count', out.count[...])
report.array('in-count', m.count[...])
