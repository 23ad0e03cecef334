"""GraphDef: equality and hash across equal structures, a pytree without
leaves, a static jax.jit argument, outer-index helpers, apply/call."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.n = nnx.BatchStat(jnp.array(0))

  def inc(self, k):
    self.n[...] += k
    return self.n[...]


g1, s = nnx.split(M())
g2, _ = nnx.split(M())
report.value('equal', [g1 == g2, hash(g1) == hash(g2)])
report.value('leaves', len(jax.tree.leaves(g1)))
report.value('no-outer', g1.with_no_outer_index() == g1)
report.value('same-outer', g1.with_same_outer_index() == g1)
report.value(
  'same-outer-equal', g1.with_same_outer_index() == g2.with_same_outer_index()
)
traces = []


@jax.jit
def f(x, g):
  traces.append(1)
  return x + 1


f(1.0, g1)
f(1.0, g2)
report.value('traces', len(traces))
out, (g3, s3) = g1.apply(s).inc(2)
report.array('apply-out', out)
report.array('apply-state', s3['n'][...])
report.array('original-state', s['n'][...])
out, _ = nnx.call((g1, s)).inc(5)
report.array('call-out', out)
report.value('caller', type(g1.apply(s)).__name__)
