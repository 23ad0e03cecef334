"""nnx.split / merge / graph.flatten on bare leaves and plain containers.

A root that is not a node (an array, a number, a string) is its own state;
dicts, tuples and dataclass pytrees holding raw arrays next to Variables
split and merge in graph and tree mode.
"""

import dataclasses

import jax
import jax.numpy as jnp
import report
from flax import nnx

arr = jnp.arange(3.0)
graphdef, state = nnx.split(arr)
report.value('split(array) state is the array', state is arr)
report.array('merge(split(array))', nnx.merge(graphdef, state))
graphdef, state = nnx.split(arr, graph=False)
report.value('split(array, graph=False) state is the array', state is arr)
report.array('merge tree mode array', nnx.merge(graphdef, state))
for value in (42, 1.5, 'abc', True):
  graphdef, state = nnx.split(value)
  report.value(f'split({value!r}) state', state)
  report.value(f'merge(split({value!r}))', nnx.merge(graphdef, state))
  report.value(
    f'graphdef({value!r}).num_leaves', nnx.graphdef(value).num_leaves
  )
for empty in (None, (), [], {}):
  graphdef, state = nnx.split(empty)
  report.value(f'split({empty!r}) keys', list(state.keys()))
  report.value(f'merge(split({empty!r}))', repr(nnx.merge(graphdef, state)))

graphdef, params, rest = nnx.split(jnp.ones(2), nnx.Param, ...)
report.value('split(array, Param, ...) params keys', list(params.keys()))
report.array('split(array, Param, ...) rest', rest)

for graph in (True, False):
  d = {'p': nnx.Param(jnp.ones(2)), 'a': jnp.zeros(1)}
  graphdef, state = nnx.split(d, graph=graph)
  report.tree(f'dict state graph={graph}', state)
  merged = nnx.merge(graphdef, state)
  report.value(f'dict merged keys graph={graph}', sorted(merged))
  report.array(f'dict merged a graph={graph}', merged['a'])
  report.value(
    f'dict merged p is Param graph={graph}', type(merged['p']).__name__
  )
  _, params, rest = nnx.split(d, nnx.Param, ..., graph=graph)
  report.tree(f'dict params graph={graph}', params)
  report.tree(f'dict rest graph={graph}', rest)
  _, flat = nnx.graph.flatten(d, graph=graph)
  report.value(f'dict flat paths graph={graph}', [list(p) for p, _ in flat])

  t = (nnx.Param(jnp.ones(1)), jnp.zeros(1))
  merged = nnx.merge(*nnx.split(t, graph=graph))
  report.value(
    f'tuple merged types graph={graph}', [type(x).__name__ for x in merged]
  )
  report.array(f'tuple merged [1] graph={graph}', merged[1])


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Pair:
  a: jax.Array
  p: nnx.Param


for graph in (True, False):
  graphdef, state = nnx.split(
    Pair(jnp.zeros(1), nnx.Param(jnp.ones(1))), graph=graph
  )
  report.tree(f'dataclass state graph={graph}', state)
  merged = nnx.merge(graphdef, state)
  report.value(f'dataclass merged type graph={graph}', type(merged).__name__)
  report.array(f'dataclass merged a graph={graph}', merged.a)
  report.array(f'dataclass merged p graph={graph}', merged.p[...])


class Model(nnx.Module):
  def __init__(self):
    self.pair = nnx.data(Pair(jnp.zeros(2), nnx.Param(jnp.ones(2))))


model = Model()
state = nnx.state(model)
report.tree('module with dataclass attribute state', state)
with report.raises('update of an immutable dataclass attribute'):
  nnx.update(model, jax.tree.map(lambda x: x + 1, state))

d = {'a': jnp.zeros(1)}
nnx.update(d, {'a': jnp.ones(1)})
report.array('update plain dict in place', d['a'])
