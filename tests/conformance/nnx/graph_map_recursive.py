"""nnx.map and nnx.recursive_map in graph and tree mode."""

import jax.numpy as jnp
import report
from flax import nnx


class Sub(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(1))


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.c = 1
    self.sub = Sub()


m = M()
seen = []
m2 = nnx.map(
  lambda path, x: seen.append([list(path), type(x).__name__]) or x, m
)
report.value('map-visits', seen)
report.value('map-identity', [m2 is m, m2.a is m.a, m2.sub is m.sub])
m3 = nnx.map(lambda path, x: x[...] * 2, m)
report.value('map-type', type(m3.a).__name__)
report.array('map-value', m3.a[...])


def f(path, node):
  if isinstance(node, nnx.Param):
    return nnx.BatchStat(node[...] * 3)
  if isinstance(node, int):
    return node + 10
  return node


r = nnx.recursive_map(f, m)
report.value(
  'graph', [r is m, type(r.a).__name__, r.c, type(m.a).__name__, m.c]
)
report.array('graph-value', r.a[...])
r = nnx.recursive_map(f, m, graph=False)
report.value('tree', [type(r.a).__name__, r.c])
d = nnx.recursive_map(f, {'x': nnx.Param(jnp.ones(1)), 'y': 2, 'z': [1]})
report.value('dict', [type(d['x']).__name__, d['y'], d['z']])
report.value(
  'replace-node',
  nnx.recursive_map(lambda p, n: 'r' if isinstance(n, M) else n, {'m': m}),
)


class S(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = self.a


s = nnx.recursive_map(f, S())
report.value('shared', [type(s.a).__name__, s.a is s.b])
