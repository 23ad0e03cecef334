"""Registered pytrees (namedtuples, dataclasses) in a graph: their
children enter the state in sorted key order, and merge/jit/clone rebuild
them with their own field order."""

import collections
import dataclasses

import jax
import jax.numpy as jnp
import report
from flax import nnx

Pt = collections.namedtuple('Pt', ['y', 'x'])


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class ZA:
  z: jax.Array
  a: jax.Array


for graph in (True, False):
  pt = Pt(y=nnx.Param(jnp.array(1.0)), x=nnx.Param(jnp.array(2.0)))
  _, flat = nnx.graph.flatten(pt, graph=graph)
  report.value(
    f'namedtuple flat paths graph={graph}', [list(p) for p, _ in flat]
  )
  za = ZA(jnp.ones(1), jnp.zeros(1))
  graphdef, state = nnx.split(za, graph=graph)
  report.value(f'dataclass state keys graph={graph}', list(state.keys()))
  merged = nnx.merge(graphdef, state)
  report.array(f'dataclass merged z graph={graph}', merged.z)
  report.array(f'dataclass merged a graph={graph}', merged.a)


class Holder(nnx.Module):
  def __init__(self):
    self.p = nnx.data(
      Pt(y=nnx.Param(jnp.array(1.0)), x=nnx.Param(jnp.array(2.0)))
    )
    self.q = nnx.data(Pt(y=jnp.array(3.0), x=jnp.array(4.0)))


m = Holder()
graphdef, state = nnx.split(m)
report.value('module state keys p', list(state['p'].keys()))
report.value('module state keys q', list(state['q'].keys()))
merged = nnx.merge(graphdef, state)
report.value('merged q', [float(merged.q.y), float(merged.q.x)])
report.value('merged p', [float(merged.p.y[...]), float(merged.p.x[...])])


@nnx.jit
def step(m):
  m.p.x[...] = m.p.x[...] + 10
  return m.q.x + m.p.y[...]


report.array('jit output', step(m))
report.array('jit updated p.x', m.p.x[...])
report.value('clone q', [float(v) for v in nnx.clone(m).q])
