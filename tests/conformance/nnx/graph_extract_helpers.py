"""flax.nnx.extract tree-mode helpers: broadcast_prefix2/_map, extract and
insert, labeled, filter_kwargs, snapshot/get_updates/apply_updates,
Updates, to_masked, carry helpers, aliasing checks, to_tree2/from_tree2."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import extract as E

K = jax.tree_util


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))


p = nnx.Param(jnp.ones(2))
b = nnx.BatchStat(jnp.zeros(1))
report.text('bp2', repr(E.broadcast_prefix2({'a': 1}, {'a': {'x': 1, 'y': 2}})))
report.text('bp2-vars', repr(E.broadcast_prefix2(0, [p, b])))
with report.raises('bp2-none'):
  E.broadcast_prefix2((0, None), ([1, 2], 3))
report.text(
  'bp2-prefix-leaf',
  repr(
    E.broadcast_prefix2((0, None), ([1, 2], 3), prefix_leaf=lambda x: x is None)
  ),
)
report.text(
  'bpm',
  repr(
    E.broadcast_prefix_map(
      lambda path, pre, x: (path, pre, x), (0, 1), ([1, 2], 3)
    )
  ),
)
tree, taken = E.extract(lambda path, pre, x: pre == 1, (0, 1), ([1, 2], 3))
report.text('extract', repr((tree, taken)))
report.text('insert', repr(E.insert(tree, [99])))
report.text('labeled', repr(E.labeled(a=1, b=2)))


def g(a, *, b=0):
  pass


report.value('filter-kwargs', E.filter_kwargs(g, a=1, b=2, c=3))
report.value('filter-kwargs-var', E.filter_kwargs(lambda **kw: None, a=1))
q = p.copy()
q.set_metadata('tag', 1)
report.value(
  'changed',
  [
    E.variable_changed(p, p),
    E.variable_changed(p.copy(), p),
    E.variable_changed(p.copy(jnp.ones(2)), p),
    E.variable_changed(q, p),
  ],
)
pre = [nnx.Param(jnp.ones(2)), nnx.BatchStat(jnp.zeros(1)), 3]
cur, snap = E.snapshot(pre)
report.value('snapshot', [cur[0] is pre[0], snap[0] is pre[0], cur is pre])
cur[0][...] = jnp.full(2, 2.0)
[ups] = E.get_updates(cur, snap)
report.text('updates-paths', repr(ups.paths))
report.value('updates-len', [len(ups), ups.leaves[0] is pre[0]])
groups = E.get_updates(
  cur,
  snap,
  prefix=[0, None, None],
  known_prefixes=(0, None),
  keep_fn=lambda *a: True,
)
report.text('updates-groups', repr([g.paths for g in groups]))
with report.raises('unknown-prefix'):
  E.get_updates(cur, snap, prefix=0)
with report.raises('slice'):
  ups[0:1]
masked = E.to_masked(cur, [ups])
report.value(
  'masked',
  [[type(x).__name__ for x in masked], masked[0].get_raw_value() is None],
)
target = nnx.Param(jnp.ones(2))
path = (K.GetAttrKey('a'), K.GetAttrKey('w'))
E.apply_updates(
  {path: target},
  [E.Updates.create([(path, nnx.Param(jnp.full(2, 9.0), tag=1))])],
)
report.array('applied', target[...])
report.value('applied-tag', target.tag)
with report.raises('apply-missing'):
  E.apply_updates({}, [E.Updates.create([(path, target)])])
a, c = nnx.Param(jnp.ones(2)), nnx.Param(jnp.zeros(2))
out = E.update_carry_variables([a, 1], [c, 2])
report.value('carry', [out[0] is a, out[1]])
report.array('carry-value', a[...])
m = M()
with report.raises('same-variables'):
  E.check_same_variables((m,), (M(),), 'scan')
report.text('no-aliases', repr(E.check_no_aliases('jit', a=[m, 2])))
with report.raises('aliases'):
  E.check_no_aliases('jit', a=m, b=m)
report.value(
  'check-prefix', E.check_prefix((None, 0), 'in_axes', 'vmap', False, False)
)
with report.raises('check-prefix-state-axes'):
  E.check_prefix(nnx.StateAxes({...: 0}), 'in_axes', 'vmap', False, True)
seen = {}
E.check_consistent_aliasing2(m, 0, node_prefixes=seen)
with report.raises('aliasing2'):
  E.check_consistent_aliasing2(m, 1, base_path=('x',), node_prefixes=seen)
tt = E.to_tree2((m, m.w, 3))
report.value('to-tree2', [type(x).__name__ for x in tt])
report.tree('to-tree2-state', tt[0].state)
x, w, n = E.from_tree2(tt)
report.value('from-tree2', [x is m, x.w is m.w, w is m.w, n])
with report.raises('to-tree2-aliasing'):
  E.to_tree2((m, m), prefix=(0, 1))
