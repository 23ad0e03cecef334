"""to_tree / from_tree with shared nodes, NodeStates API, prefix and
inconsistent aliasing."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import extract


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))


m = M()
t = nnx.to_tree((m, m, 1, jnp.ones(1)))
report.value('types', [type(x).__name__ for x in t])
ns = t[0]
report.value(
  'node-states',
  [
    type(ns.graphdef).__name__,
    type(ns.state).__name__,
    len(ns.states),
    ns.metadata,
  ],
)
report.value('second', [len(t[1].states[0]), type(t[1].graphdef).__name__])
report.value('leaves', len(jax.tree.leaves(t)))
x = nnx.from_tree(t)
report.value(
  'from-tree', [x[0] is x[1], x[2], x[0].a is m.a, type(x[0]).__name__]
)
p = nnx.prefix(m, {nnx.Param: 0, nnx.BatchStat: None})
report.text('prefix', repr(p.state))
p2 = nnx.prefix((m, 1), lambda path, x: path)
report.text('prefix-fn', repr(p2[0].state))
report.value('prefix-leaf', list(p2[1]))
with report.raises('no-graphdef'):
  extract.NodeStates.from_states(ns.state).graphdef
report.value(
  'from-prefixes',
  list(extract.NodeStates.from_prefixes([0, None], metadata='m').states),
)
with report.raises('aliasing'):
  nnx.to_tree((m, m), prefix=(0, 1))
report.value('find', [extract.find((1, 2, 3), 2), extract.find((1,), 5)])
report.value('replace-at', list(extract.replace_at((1, 2, 3), 1, 'x')))
report.value('slice-at', str(extract.slice_at((1, 2, 3), 1)))
report.value('mask-at', str(extract.mask_at((1, 2, 3), 1)))
