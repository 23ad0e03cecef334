"""Tree mode (graph=False) of the graph API: the GraphDef is a TreeNodeDef
(the node's JAX treedef, Variables as leaves) followed by one VariableDef
per Variable, every pytree leaf is a leaf of the state, and the split,
merge and update contexts drop their indices when they end. Expected
values are those of Flax 0.12.8."""

import collections
import dataclasses
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx import extract, graphlib


class Sub(nnx.Module):
  def __init__(self):
    self.k = nnx.Param(jnp.ones(1))


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.n = 3
    self.s = 'hi'
    self.arr = jnp.zeros(1)
    self.none = None
    self.lst = nnx.List([nnx.BatchStat(jnp.zeros(1)), 5])
    self.sub = Sub()
    self.ints = [1, 2]
    self.dl = nnx.data([jnp.ones(1), 4])
    self.d = nnx.data(7)


MODEL_PATHS = [
  ('arr',),
  ('d',),
  ('dl', 0),
  ('dl', 1),
  ('lst', 0),
  ('sub', 'k'),
  ('w',),
]


def test_module_graphdef_nodes():
  graphdef, state = nnx.split(Model(), graph=False)
  assert [type(n).__name__ for n in graphdef.nodes] == [
    'TreeNodeDef',
    'VariableDef',
    'VariableDef',
    'VariableDef',
  ]
  assert graphdef.attributes == []
  assert graphdef.num_leaves == 7
  root = graphdef.nodes[0]
  assert root.type is Model
  assert type(root.treedef).__name__ == 'PyTreeDef'
  assert root.treedef.num_leaves == 7
  assert root.path_index == tuple((p, i) for i, p in enumerate(MODEL_PATHS))
  assert [(n.type, n.index, n.outer_index) for n in graphdef.nodes[1:]] == [
    (nnx.BatchStat, 4, None),
    (nnx.Param, 5, None),
    (nnx.Param, 6, None),
  ]
  assert dict(graphdef.nodes[1].metadata) == {
    'hijax': False,
    'ref': False,
    'eager_sharding': True,
  }
  # every pytree leaf is a leaf of the state, not only the Variables
  assert [p for p, _ in nnx.to_flat_state(state)] == MODEL_PATHS
  assert state['d'] == 7 and state['dl'][1] == 4


def test_module_merge_round_trip():
  m = Model()
  graphdef, state = nnx.split(m, graph=False)
  m2 = nnx.merge(graphdef, state)
  assert type(m2) is Model and m2 is not m
  assert (m2.n, m2.s, m2.lst[1], m2.d, m2.ints, m2.dl[1]) == (
    3,
    'hi',
    5,
    7,
    [1, 2],
    4,
  )
  assert m2.w is state['w'] and m2.sub.k is state['sub']['k']
  assert m2.none is None
  # plain values are wrapped again in the recorded Variable types
  m3 = nnx.merge(graphdef, nnx.as_pure(state))
  assert type(m3.w) is nnx.Param and type(m3.lst[0]) is nnx.BatchStat
  np.testing.assert_array_equal(m3.w[...], jnp.ones(2))


def test_variable_root():
  v = nnx.Param(jnp.ones(2))
  graphdef, state = nnx.split(v, graph=False)
  assert [type(n).__name__ for n in graphdef.nodes] == [
    'TreeNodeDef',
    'VariableDef',
  ]
  assert graphdef.nodes[0].type is nnx.Param
  assert graphdef.nodes[0].path_index == (((), 0),)
  assert str(graphdef.nodes[0].treedef) == 'PyTreeDef(*)'
  assert state is v
  assert nnx.merge(graphdef, state) is v
  new = nnx.merge(graphdef, jnp.zeros(2))
  assert type(new) is nnx.Param
  np.testing.assert_array_equal(new[...], jnp.zeros(2))


@pytest.mark.parametrize('graph', [True, False])
def test_leaf_roots(graph):
  arr = jnp.array(1.0)
  assert nnx.split(arr, graph=graph)[1] is arr
  assert nnx.split(42, graph=graph)[1] == 42
  assert nnx.merge(*nnx.split(42, graph=graph)) == 42
  assert float(nnx.merge(*nnx.split(arr, graph=graph))) == 1.0


def test_leaf_and_empty_roots_graphdefs():
  graphdef, _ = nnx.split(42, graph=False)
  assert repr(graphdef) == (
    "GraphDef(nodes=[TreeNodeDef(type=<class 'int'>, treedef=PyTreeDef(*), "
    'path_index=(((), 0),))], attributes=[], num_leaves=1)'
  )
  graphdef, state = nnx.split(None, graph=False)
  assert graphdef.nodes[0].path_index == () and graphdef.num_leaves == 0
  assert len(state) == 0
  graphdef, state = nnx.split({'a': 'abc', 'n': None}, graph=False)
  assert graphdef.nodes[0].path_index == ((('a',), 0),)
  assert dict(state) == {'a': 'abc'}


def test_containers_of_arrays():
  tree = {'p': nnx.Param(jnp.ones(2)), 'a': jnp.zeros(1), 'n': 3}
  graphdef, state = nnx.split(tree, graph=False)
  assert sorted(state) == ['a', 'n', 'p']
  out = nnx.merge(graphdef, state)
  np.testing.assert_array_equal(out['a'], jnp.zeros(1))
  assert out['n'] == 3 and out['p'] is tree['p']
  pair = nnx.merge(
    *nnx.split((nnx.Param(jnp.ones(1)), jnp.zeros(1)), graph=False)
  )
  np.testing.assert_array_equal(pair[1], jnp.zeros(1))
  # graph mode keeps the int static
  assert sorted(nnx.split(tree, graph=True)[1]) == ['a', 'p']


def test_graphdef_repr():
  graphdef, _ = nnx.split({'b': nnx.Param(jnp.ones(1)), 'a': 3}, graph=False)
  assert repr(graphdef) == (
    "GraphDef(nodes=[TreeNodeDef(type=<class 'dict'>, treedef=PyTreeDef("
    "{'a': *, 'b': *}), path_index=((('a',), 0), (('b',), 1))), VariableDef(\n"
    "  type='Param',\n"
    '  index=1,\n'
    '  outer_index=None,\n'
    '  metadata=PrettyMapping({\n'
    "    'hijax': False,\n"
    "    'ref': False,\n"
    "    'eager_sharding': True\n"
    '  })\n'
    ')], attributes=[], num_leaves=2)'
  )


def test_namedtuple_paths_sorted():
  Pt = collections.namedtuple('Pt', ['y', 'x'])
  p = Pt(y=nnx.Param(jnp.array(1.0)), x=jnp.array(2.0))
  graphdef, flat = nnx.graph.flatten(p, graph=False)
  assert [path for path, _ in flat] == [('x',), ('y',)]
  assert graphdef.nodes[0].path_index == ((('x',), 1), (('y',), 0))
  # a VariableDef indexes the leaves in path order
  assert [n.index for n in graphdef.nodes[1:]] == [1]
  # without paths: the leaves in the same order, Variables as they are
  _, leaves = nnx.graph.flatten(p, graph=False, with_paths=False)
  assert leaves[1] is p.y and float(leaves[0]) == 2.0
  out = nnx.graph.unflatten(graphdef, [jnp.array(5.0), jnp.array(6.0)])
  assert type(out) is Pt and type(out.y) is nnx.Param
  assert float(out.y[...]) == 6.0 and float(out.x) == 5.0


def test_graphdef_equality_and_records():
  def make(value, **meta):
    return {'a': value, 'p': nnx.Param(jnp.ones(2), **meta)}

  g = nnx.graphdef(make(3), graph=False)
  assert g == nnx.graphdef(make(4), graph=False)
  assert hash(g) == hash(nnx.graphdef(make(4), graph=False))
  assert g != nnx.graphdef(make(4, foo=1), graph=False)
  assert g != nnx.graphdef(make(3), graph=True)
  assert graphlib.GraphDef(g.nodes, g.attributes, g.num_leaves) == g
  assert pickle.loads(pickle.dumps(g)) == g


def test_filters_state_map_clone_unpack():
  m = Model()
  _, params, rest = nnx.split(m, nnx.Param, ..., graph=False)
  assert sorted(params) == ['sub', 'w']
  assert sorted(rest) == ['arr', 'd', 'dl', 'lst']
  with pytest.raises(ValueError, match='Non-exhaustive filters'):
    nnx.split(m, nnx.Param, nnx.BatchStat, graph=False)
  tree = {'a': 3, 'p': nnx.Param(jnp.ones(2))}
  assert dict(nnx.state(tree, graph=False)) == {'a': 3, 'p': tree['p']}
  assert list(nnx.state(tree, nnx.Param, graph=False)) == ['p']
  doubled = nnx.map(lambda path, x: x * 2, tree, graph=False)
  assert doubled['a'] == 6 and type(doubled['p']) is nnx.Param
  copy = nnx.clone(tree, graph=False)
  assert copy['a'] == 3 and copy['p'] is not tree['p']
  gs = nnx.unpack(tree, graph=False)
  assert list(gs) == ['a', 'p']
  assert nnx.merge(gs)['a'] == 3


def test_shared_references_raise():
  v = nnx.Param(jnp.ones(2))
  for fn in (nnx.split, nnx.state, nnx.graphdef, nnx.graph.flatten):
    with pytest.raises(ValueError, match='Duplicate Param'):
      fn({'a': v, 'b': [v]}, graph=False)
  r = jax.new_ref(jnp.array(1.0))
  with pytest.raises(ValueError, match='Duplicate Ref'):
    nnx.split([r, r], graph=False)
  # arrays and Modules without Variables may be shared
  a = jnp.ones(1)
  assert len(nnx.split([a, a], graph=False)[1]) == 2

  class Empty(nnx.Module):
    def __init__(self):
      self.n = 1

  e = Empty()
  assert len(nnx.split([e, e], graph=False)[1]) == 0


def test_contexts_drop_their_indices_on_exit():
  m = Sub()
  with nnx.split_context() as ctx:
    assert hasattr(ctx, 'ref_index') and hasattr(ctx, 'ctxtag')
    graphdef, state = ctx.split(m)
  assert not hasattr(ctx, 'ref_index') and not hasattr(ctx, 'ctxtag')
  assert ctx.is_inner is None
  with nnx.merge_context() as ctx:
    ctx.merge(graphdef, state)
  assert not hasattr(ctx, 'index_ref') and not hasattr(ctx, 'ctxtag')
  with nnx.update_context('tag') as update:
    with nnx.split_context('tag') as ctx:
      graphdef, state = ctx.split(m)
    with nnx.merge_context('tag', True) as ctx:
      ctx.merge(graphdef, state)
    assert 'inner_ref_outer_index' in vars(update)
  assert sorted(vars(update)) == ['static_cache', 'tag']


def test_hand_built_vmap_with_state_axes():
  class M(nnx.Module):
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
  m = M()

  @nnx.update_context('vmap')
  def vmapped(m, x):
    pure = nnx.to_tree((m, x), ctxtag='vmap', prefix=in_axes, split_fn=split_fn)
    axes = jax.tree.map(
      jax_axes, in_axes, is_leaf=lambda x: isinstance(x, nnx.StateAxes)
    )

    def f(pure):
      mm, xx = nnx.from_tree(pure, ctxtag='vmap', is_inner=True)
      mm.b[...] = mm.b[...] + 1
      out = (mm, mm.w[...] * xx)
      return nnx.to_tree(out, ctxtag='vmap', prefix=in_axes, split_fn=split_fn)

    out = jax.vmap(f, in_axes=(axes,), out_axes=axes)(pure)
    return nnx.from_tree(out, ctxtag='vmap', is_inner=False)

  out_m, y = vmapped(m, jnp.full((3, 2), 2.0))
  assert out_m is m
  np.testing.assert_array_equal(m.b[...], jnp.ones(1))
  np.testing.assert_array_equal(y, jnp.full((3, 2), 2.0))


def test_structure_changes_are_seen_between_splits():
  m = Model()
  graphdef, state = nnx.split(m, graph=False)
  assert nnx.split(m, graph=False)[0] == graphdef  # unchanged structure
  m.n = 4
  assert nnx.graphdef(m, graph=False) != graphdef
  assert nnx.merge(*nnx.split(m, graph=False)).n == 4
  m.arr = jnp.full(1, 2.0)
  np.testing.assert_array_equal(nnx.state(m, graph=False)['arr'], [2.0])
  m.dl[1] = 9
  assert nnx.state(m, graph=False)['dl'][1] == 9
  m.lst.append(nnx.BatchStat(jnp.ones(1)))
  assert sorted(nnx.state(m, graph=False)['lst']) == [0, 2]
  m.w.set_metadata('tag', 'x')
  variable_defs = nnx.graphdef(m, graph=False).nodes[1:]
  assert dict(variable_defs[-1].metadata)['tag'] == 'x'
  # the State is a fresh object every time
  state = nnx.state(m, graph=False)
  state['w'] = nnx.Param(jnp.zeros(2))
  assert nnx.state(m, graph=False)['w'] is m.w


def test_mutable_pytree_fields_are_read_again():
  @jax.tree_util.register_dataclass
  @dataclasses.dataclass
  class Counter:
    count: int

  class Holder(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(1))
      self.c = nnx.data(Counter(1))

  h = Holder()
  assert nnx.state(h, graph=False)['c']['count'] == 1
  h.c.count = 2  # changed in place
  assert nnx.state(h, graph=False)['c']['count'] == 2
