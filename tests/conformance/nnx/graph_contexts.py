"""split_context / merge_context sharing references, update_context round
trip that updates the original object, errors for unknown tags."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))


m = M()
with nnx.split_context() as ctx:
  report.value(
    'split-ctx', [ctx.ctxtag, type(ctx.ref_index).__name__, ctx.is_inner]
  )
  g1, s1 = ctx.split(m)
  g2, s2 = ctx.split(m)
  g3, fs3 = ctx.flatten(m)
  report.value('second', [type(fs3).__name__, len(s2), len(fs3)])
with nnx.merge_context() as ctx2:
  report.value(
    'merge-ctx', [ctx2.ctxtag, type(ctx2.index_ref).__name__, ctx2.is_inner]
  )
  x1 = ctx2.merge(g1, s1)
  x2 = ctx2.merge(g2, s2)
report.value('shared', [x1 is x2, x1.a is m.a])
with report.raises('unresolved-reference'):
  with nnx.merge_context() as c3:
    c3.merge(g2, s2)
with nnx.update_context('t') as uc:
  report.value(
    'update-ctx', [type(uc).__name__, nnx.current_update_context('t') is uc]
  )
with report.raises('no-update-context'):
  nnx.current_update_context('zz')
report.value('manager', type(nnx.update_context('t')).__name__)


@nnx.update_context('t2')
def f():
  return type(nnx.current_update_context('t2')).__name__


report.value('decorated', f())
with nnx.update_context('u'):
  with nnx.split_context('u') as sc:
    g, s = sc.split(m)
  with nnx.merge_context('u', True) as mc:
    inner = mc.merge(g, s)
  inner.a[...] = inner.a[...] + 1
  inner.b = nnx.Param(jnp.zeros(1))
  with nnx.split_context('u') as sc2:
    g2, s2 = sc2.split(inner)
  with nnx.merge_context('u', False) as mc2:
    y = mc2.merge(g2, s2)
report.value('round-trip', [y is m, hasattr(m, 'b'), inner is m])
report.array('updated', m.a[...])
with report.raises('split-unknown-tag'):
  with nnx.split_context('nope'):
    pass
