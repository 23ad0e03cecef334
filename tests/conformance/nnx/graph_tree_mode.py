"""graph=False (tree mode): GraphDefs differ from graph mode, shared
references raise ValueError, merge of a wrong number of leaves."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = self.a


class N(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.c = 1


n = N()
g_tree, s = nnx.split(n, graph=False)
g_graph, _ = nnx.split(n)
report.value('differ', g_tree == g_graph)
report.value('graphdef-tree', nnx.graphdef(n, graph=False) == g_tree)
report.value('keys', list(s))
report.value(
  'merged', [type(nnx.merge(g_tree, s)).__name__, nnx.merge(g_tree, s).a is n.a]
)
report.value('state-keys', list(nnx.state(n, graph=False)))
with report.raises('shared-split'):
  nnx.split(M(), graph=False)
with report.raises('shared-state'):
  nnx.state(M(), graph=False)
with report.raises('wrong-leaf-count'):
  nnx.merge(nnx.graphdef(M()), nnx.State({}))
report.value(
  'duplicates', [[list(p) for p in d] for d in nnx.find_duplicates(M())]
)
report.value('duplicates-only', nnx.find_duplicates(M(), only=nnx.BatchStat))
