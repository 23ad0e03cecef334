"""register_graph_node_type: a user container class as a graph node:
split (GraphDef records, State), merge, state, update, pop, clone,
iter_graph, find_duplicates, aux data, inside a Module under nnx.jit."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import graph


class Box:
  def __init__(self, tag=None, **items):
    self.tag = tag
    self.items = dict(items)


report.value(
  'register',
  graph.register_graph_node_type(
    Box,
    lambda b: (sorted(b.items.items()), b.tag),
    lambda b, k, v: b.items.__setitem__(k, v),
    lambda b, k: b.items.pop(k),
    lambda tag: Box(tag),
    lambda b: b.items.clear(),
    lambda b, items: b.items.update(items),
  ),
)


def make():
  return Box(
    'enc',
    w=nnx.Param(jnp.ones(2)),
    c=nnx.BatchStat(jnp.zeros(1)),
    s=3,
    a=jnp.arange(2),
  )


b = make()
report.value('is-node', [graph.is_graph_node(b), graph.is_node(b)])
graphdef, state = nnx.split(b)
report.value(
  'nodes',
  [
    [type(n).__name__, n.type.__name__, n.index, getattr(n, 'metadata', None)]
    for n in graphdef.nodes
    if isinstance(n, graph.NodeDef)
  ],
)
report.value('attributes', [(k, repr(v)) for k, v in graphdef.attributes])
report.text('state', repr(state))
new = nnx.merge(graphdef, state)
report.value(
  'merged',
  [
    type(new).__name__,
    new.tag,
    sorted(new.items),
    new.items['w'] is b.items['w'],
  ],
)
report.value('equal-graphdef', nnx.graphdef(make()) == graphdef)
report.tree('param-state', nnx.state(b, nnx.Param))
nnx.update(b, jax.tree.map(lambda x: x + 1, state))
report.array('updated-w', b.items['w'][...])
report.array('updated-a', b.items['a'])
c = nnx.clone(b)
report.value('clone', [type(c).__name__, c.items['w'] is b.items['w'], c.tag])
report.value(
  'iter-graph', [(p, type(v).__name__) for p, v in nnx.iter_graph(b)]
)
report.tree('popped', nnx.pop(b, nnx.BatchStat))
report.value('after-pop', sorted(b.items))


class M(nnx.Module):
  def __init__(self):
    self.box = Box(None, w=nnx.Param(jnp.ones(3)))
    self.shared = self.box.items['w']


m = M()
report.value('duplicates', nnx.find_duplicates(m))
m2 = nnx.merge(*nnx.split(m))
report.value('shared', m2.box.items['w'] is m2.shared)


@nnx.jit
def step(m):
  m.box.items['w'][...] += 1
  return m.box.items['w'][...]


report.array('jit-out', step(m))
report.array('jit-updated', m.box.items['w'][...])
with report.raises('register-module'):
  graph.register_graph_node_type(M, *([None] * 6))
