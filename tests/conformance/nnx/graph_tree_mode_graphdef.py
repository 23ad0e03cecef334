"""graph=False (tree mode): the GraphDef is a TreeNodeDef (JAX treedef,
leaf paths) followed by VariableDefs, every pytree leaf (arrays, ints) is
a leaf of the state, bare leaves split to themselves; split/merge/update
contexts drop their indices on exit; a hand-built vmap through
to_tree/from_tree with a StateAxes prefix."""

import collections

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import extract


class Sub(nnx.Module):
  def __init__(self):
    self.k = nnx.Param(jnp.ones(1))


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.n = 3
    self.arr = jnp.zeros(1)
    self.none = None
    self.lst = nnx.List([nnx.BatchStat(jnp.zeros(1)), 5])
    self.sub = Sub()
    self.dl = nnx.data([jnp.ones(1), 4])
    self.d = nnx.data(7)


def nodes_of(graphdef):
  out = []
  for n in graphdef.nodes:
    if type(n).__name__ == 'TreeNodeDef':
      out.append(
        [
          'TreeNodeDef',
          n.type.__name__,
          type(n.treedef).__name__,
          n.treedef.num_leaves,
          [[list(p), i] for p, i in n.path_index],
        ]
      )
    else:
      out.append(
        [type(n).__name__, n.type.__name__, n.index, n.outer_index]
        + [sorted(dict(n.metadata).items())]
      )
  return out


# item 24: bare leaves and containers of arrays
arr = jnp.array(1.0)
report.value('split-array-is-state', nnx.split(arr)[1] is arr)
report.value('split-42', repr(nnx.split(42)[1]))
report.value('split-42-tree', repr(nnx.split(42, graph=False)[1]))
report.array(
  'dict-merge',
  nnx.merge(
    *nnx.split({'p': nnx.Param(jnp.ones(2)), 'a': jnp.zeros(1)}, graph=False)
  )['a'],
)
report.array(
  'tuple-merge',
  nnx.merge(*nnx.split((nnx.Param(jnp.ones(1)), jnp.zeros(1)), graph=False))[1],
)
g, s = nnx.split(
  {'p': nnx.Param(jnp.ones(2)), 'a': jnp.zeros(1), 'n': 3}, graph=False
)
report.value('dict-state-keys', sorted(s))
report.value('dict-state-n', s['n'])
report.value('dict-nodes', nodes_of(g))
report.text(
  'dict-graphdef-repr', repr(nnx.graphdef({'b': 1, 'a': [2]}, graph=False))
)
report.value(
  'dict-graph-mode-keys',
  sorted(nnx.split({'p': nnx.Param(jnp.ones(2)), 'n': 3}, graph=True)[1]),
)

# item 33: GraphDef nodes of a Module, a Variable root, other roots
m = Model()
g, s = nnx.split(m, graph=False)
report.value('module-nodes', nodes_of(g))
report.value('module-attributes', list(g.attributes))
report.value('module-num-leaves', g.num_leaves)
report.tree('module-state', s)
m2 = nnx.merge(g, s)
report.value(
  'module-merge',
  [
    type(m2).__name__,
    m2.n,
    m2.lst[1],
    m2.d,
    m2.dl[1],
    m2.none,
    m2.w is s['w'],
    m2.sub.k is s['sub']['k'],
  ],
)
m3 = nnx.merge(g, nnx.as_pure(s))
report.value(
  'pure-merge-types', [type(m3.w).__name__, type(m3.lst[0]).__name__]
)
_, params, rest = nnx.split(m, nnx.Param, ..., graph=False)
report.value('filter-keys', [sorted(params), sorted(rest)])
with report.raises('non-exhaustive'):
  nnx.split(m, nnx.Param, nnx.BatchStat, graph=False)
report.value(
  'state-filter',
  sorted(nnx.state({'a': 3, 'p': nnx.Param(1.0)}, nnx.Param, graph=False)),
)
v = nnx.Param(jnp.ones(2))
gv, sv = nnx.split(v, graph=False)
report.value('variable-nodes', nodes_of(gv))
report.value('variable-state-is-variable', sv is v)
report.value('variable-merge', nnx.merge(gv, sv) is v)
report.value('none-nodes', nodes_of(nnx.graphdef(None, graph=False)))
report.value('str-nodes', nodes_of(nnx.graphdef('abc', graph=False)))
Pt = collections.namedtuple('Pt', ['y', 'x'])
pt = Pt(y=nnx.Param(jnp.array(1.0)), x=jnp.array(2.0))
gp, flat = nnx.graph.flatten(pt, graph=False)
report.value('namedtuple-paths', [list(p) for p, _ in flat])
report.value('namedtuple-nodes', nodes_of(gp))
_, leaves = nnx.graph.flatten(pt, graph=False, with_paths=False)
report.value('namedtuple-leaves', [type(x).__name__ for x in leaves])
out = nnx.graph.unflatten(gp, [jnp.array(5.0), jnp.array(6.0)])
report.value(
  'namedtuple-unflatten',
  [type(out.y).__name__, float(out.y[...]), float(out.x)],
)
ga = nnx.graphdef({'a': 3, 'p': nnx.Param(jnp.ones(2))}, graph=False)
report.value(
  'graphdef-eq',
  [
    ga == nnx.graphdef({'a': 4, 'p': nnx.Param(jnp.ones(3))}, graph=False),
    hash(ga) == hash(nnx.graphdef({'a': 5, 'p': nnx.Param(2.0)}, graph=False)),
    ga
    == nnx.graphdef({'a': 3, 'p': nnx.Param(jnp.ones(2), foo=1)}, graph=False),
    ga == nnx.graphdef({'a': 3, 'p': nnx.Param(jnp.ones(2))}, graph=True),
    nnx.graph.GraphDef(ga.nodes, ga.attributes, ga.num_leaves) == ga,
  ],
)
report.value(
  'map-ints',
  nnx.map(lambda path, x: x * 2, {'a': 3, 'b': [4]}, graph=False),
)
with report.raises('duplicate-variable'):
  nnx.split({'a': v, 'b': [v]}, graph=False)
with report.raises('duplicate-ref'):
  r = jax.new_ref(jnp.array(1.0))
  nnx.split([r, r], graph=False)
a = jnp.ones(1)
report.value('shared-array', len(nnx.split([a, a], graph=False)[1]))

# item 34: contexts drop their indices when they end
with nnx.split_context() as ctx:
  inside = [hasattr(ctx, 'ref_index'), hasattr(ctx, 'ctxtag')]
  gs, ss = ctx.split(Sub())
report.value(
  'split-context',
  inside + [hasattr(ctx, 'ref_index'), hasattr(ctx, 'ctxtag'), ctx.is_inner],
)
with nnx.merge_context() as ctx:
  ctx.merge(gs, ss)
report.value(
  'merge-context', [hasattr(ctx, 'index_ref'), hasattr(ctx, 'ctxtag')]
)
with nnx.update_context('tag') as update:
  with nnx.split_context('tag') as ctx:
    gs, ss = ctx.split(m)
  with nnx.merge_context('tag', True) as ctx:
    ctx.merge(gs, ss)
  during = sorted(vars(update))
report.value('update-context', [during, sorted(vars(update))])
report.text('no-update', repr(nnx.graph.NO_UPDATE))


# item 36: hand-built vmap, the NodeStates GraphDef under a None prefix
class V(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((3, 2)))
    self.b = nnx.BatchStat(jnp.zeros(1))


def split_fn(ctx, path, prefix, leaf):
  if isinstance(prefix, nnx.StateAxes):
    states = ctx.split(leaf, *prefix.filters)
    return extract.NodeStates.from_split(*states, metadata=prefix)
  return extract.NodeStates.from_split(*ctx.split(leaf), metadata=prefix)


def jax_axes(x):
  if isinstance(x, nnx.StateAxes):
    return extract.NodeStates.from_prefixes(x.axes, metadata=x)
  return x


in_axes = (nnx.StateAxes({nnx.Param: 0, nnx.BatchStat: None}), 0)
vm = V()


@nnx.update_context('vmap')
def vmapped(model, x):
  pure = nnx.to_tree(
    (model, x), ctxtag='vmap', prefix=in_axes, split_fn=split_fn
  )
  axes = jax.tree.map(
    jax_axes, in_axes, is_leaf=lambda x: isinstance(x, nnx.StateAxes)
  )
  report.value('pure-leaves', len(jax.tree.leaves(pure)))

  def f(pure):
    mm, xx = nnx.from_tree(pure, ctxtag='vmap', is_inner=True)
    mm.b[...] = mm.b[...] + 1
    out = (mm, mm.w[...] * xx)
    return nnx.to_tree(out, ctxtag='vmap', prefix=in_axes, split_fn=split_fn)

  out = jax.vmap(f, in_axes=(axes,), out_axes=axes)(pure)
  return nnx.from_tree(out, ctxtag='vmap', is_inner=False)


out_m, y = vmapped(vm, jnp.full((3, 2), 2.0))
report.value('vmap-same-object', out_m is vm)
report.array('vmap-b', vm.b[...])
report.array('vmap-y', y)
