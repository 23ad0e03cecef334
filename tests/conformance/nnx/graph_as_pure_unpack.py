"""as_pure on Variables and pytrees, unpack into GraphState, merge of a
GraphState."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))


m = M()
report.tree('pure-state', nnx.as_pure(nnx.state(m)))
report.array('pure-var', nnx.as_pure(nnx.Param(jnp.ones(1), tag='t')))
report.value('pure-list', str(nnx.as_pure([nnx.Param(1), 1, 'x'])))
report.value('distinct', nnx.as_pure is nnx.pure)
u = nnx.unpack(m, nnx.Param, ...)
report.value('unpack', [type(u).__name__, len(u)])
gs = u[0]
report.value(
  'graph-state',
  [type(gs).__name__, list(gs), 'a' in gs, len(gs), type(gs['a']).__name__],
)
whole = nnx.unpack(m)
report.value('merge', type(nnx.merge(whole)).__name__)
report.value('leaves', len(jax.tree.leaves(whole)))
