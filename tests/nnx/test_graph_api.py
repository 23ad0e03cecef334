"""Graph API: split/state/merge identities and tree mode, flatten/unflatten,
GraphDef equality and outer indices, clone, find_duplicates, map,
recursive_map, as_pure, unpack, the config contexts, split/merge/update
contexts, to_tree/from_tree and prefix (behaviour of Flax 0.12.8)."""

import warnings

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx import extract, graphlib, proxy_caller


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))
    self.c = 3


class Shared(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = self.a


def test_graph_module_path():
  import flax.nnx.graph as graph

  assert graph.__name__ == 'flax.nnx.graph'
  assert graph is not graphlib and nnx.graph is graph
  assert graph.GraphDef is graphlib.GraphDef
  assert graph.set_graph_mode is nnx.set_graph_mode
  assert graph.map is nnx.map
  assert graphlib.BaseConfigContext is flax.typing.BaseConfigContext
  assert graphlib.config is flax.config
  assert graphlib.ApplyCaller is proxy_caller.ApplyCaller


def test_split_state_merge_share_variables():
  m = M()
  g, s = nnx.split(m)
  assert s['a'] is m.a and nnx.state(m)['a'] is m.a
  assert nnx.variables(m)['a'] is m.a
  m2 = nnx.merge(g, s)
  assert m2 is not m and m2.a is s['a'] and m2.c == 3
  assert nnx.merge(g, s, copy=True).a is not s['a']


def test_merge_recreate_variables():
  m = M()
  g, s = nnx.split(m)
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', DeprecationWarning)
    pure = nnx.pure(s)
  m2 = nnx.merge(g, pure)
  assert type(m2.a) is nnx.Param
  m3 = nnx.merge(g, pure, recreate_variables=False)
  assert isinstance(m3.a, jax.Array)


def test_merge_errors():
  g, _ = nnx.split(Shared())
  with pytest.raises(ValueError, match='expected 1 leaves, but got 0'):
    nnx.merge(g, nnx.State({}))
  with pytest.raises(TypeError, match='GraphDef'):
    nnx.merge(nnx.State({}), nnx.State({}))


def test_tree_mode():
  m = M()
  g_tree, s = nnx.split(m, graph=False)
  g_graph, _ = nnx.split(m)
  assert g_tree != g_graph and g_tree == nnx.graphdef(m, graph=False)
  assert list(s) == ['a', 'b']
  assert nnx.merge(g_tree, s).a is m.a
  with pytest.raises(ValueError, match='found at paths') as info:
    nnx.split(Shared(), graph=False)
  assert '.a' in str(info.value) and '.b' in str(info.value)
  assert 'Tree mode (graph=False)' in str(info.value)
  with nnx.set_graph_mode(False):
    with pytest.raises(ValueError, match='shared references'):
      nnx.state(Shared())


def test_graphdef_equality_hash_pytree_and_outer_index():
  g1, g2 = nnx.graphdef(M()), nnx.graphdef(M())
  assert g1 == g2 and hash(g1) == hash(g2)
  assert jax.tree.leaves(g1) == []
  assert jax.tree.unflatten(jax.tree.structure(g1), []) == g1
  assert g1.with_no_outer_index() == g1
  same = g1.with_same_outer_index()
  assert same != g1 and same == g2.with_same_outer_index()
  assert g1.with_matching_outer_index(same) == same
  count = []

  @jax.jit
  def f(x, g):
    count.append(1)
    return x

  f(1.0, g1)
  f(1.0, g2)
  assert len(count) == 1


def test_graphdef_apply_and_call():
  class Counter(nnx.Module):
    def __init__(self):
      self.n = nnx.BatchStat(jnp.array(0))

    def inc(self, k):
      self.n[...] += k
      return self.n[...]

  g, s = nnx.split(Counter())
  out, (g2, s2) = g.apply(s).inc(2)
  # apply merges the State's own Variables: s is updated too.
  assert int(out) == 2 and int(s2['n'][...]) == 2 and int(s['n'][...]) == 2
  out, _ = nnx.call((g, s)).inc(3)
  assert int(out) == 5
  proxy = g.apply(s, graph=False)
  assert isinstance(proxy, proxy_caller.CallableProxy)


def test_flatten_unflatten():
  m = M()
  g, fs = nnx.flatten(m)
  assert isinstance(fs, nnx.FlatState) and fs.paths == (('a',), ('b',))
  _, leaves = nnx.flatten(m, with_paths=False)
  assert isinstance(leaves, list) and isinstance(leaves[0], jax.Array)
  assert nnx.unflatten(g, fs).a is m.a
  assert nnx.unflatten(g, nnx.state(m)).a is m.a
  assert nnx.unflatten(g, leaves).a is not m.a
  assert nnx.unflatten(g, fs, copy_variables=True).a is not m.a
  np.testing.assert_array_equal(nnx.unflatten(g, leaves).a[...], [1, 1])


def test_clone_find_duplicates_iter_children():
  m = M()
  assert nnx.clone(m).a is not m.a
  assert nnx.clone(m, variables=False).a is m.a
  c = nnx.clone(m, arrays=True)
  assert c.a[...] is not m.a[...]
  np.testing.assert_array_equal(c.a[...], m.a[...])
  s = Shared()
  assert nnx.find_duplicates(s) == [[('a',), ('b',)]]
  assert nnx.find_duplicates(s, only=nnx.BatchStat) == []
  assert [k for k, _ in graphlib.iter_children(m)] == ['a', 'b']
  with pytest.raises(ValueError, match='found at paths'):
    list(nnx.iter_graph(s, graph=False))


def test_map_and_recursive_map():
  class Outer(nnx.Module):
    def __init__(self):
      self.m = M()
      self.d = nnx.Param(jnp.ones(1))

  o = Outer()
  o2 = nnx.map(lambda path, v: v, o)
  assert o2 is not o and o2.m is not o.m and o2.d is o.d
  o3 = nnx.map(lambda path, v: v[...] * 2, o)
  assert type(o3.d) is nnx.Param and o3.d[...].tolist() == [2.0]

  def f(path, node):
    if isinstance(node, nnx.Param):
      return nnx.BatchStat(node[...] * 3)
    if isinstance(node, int):
      return node + 10
    return node

  r = nnx.recursive_map(f, M())
  assert type(r.a) is nnx.Param and r.a[...].tolist() == [3.0, 3.0]
  assert r.c == 13
  r = nnx.recursive_map(f, M(), graph=False)
  assert type(r.a) is nnx.BatchStat and r.c == 3
  d = nnx.recursive_map(f, {'x': nnx.Param(jnp.ones(1)), 'y': [2]})
  assert type(d['x']) is nnx.BatchStat and d['y'] == [12]
  s = nnx.recursive_map(f, Shared())
  assert s.a is s.b


def test_as_pure_and_deprecated_pure():
  v = nnx.Param(jnp.ones(1), tag='t')
  assert nnx.as_pure([v, 1, 'x'])[1:] == [1, 'x']
  assert isinstance(nnx.as_pure(v), jax.Array)
  with pytest.warns(DeprecationWarning, match='as_pure'):
    nnx.pure({'a': v})


def test_unpack_graph_state():
  m = M()
  params, rest = nnx.unpack(m, nnx.Param, ...)
  assert isinstance(params, nnx.GraphState) and list(params) == ['a']
  assert 'a' in params and len(params) == 1 and params['a'] is m.a
  whole = nnx.unpack(m)
  assert type(nnx.merge(whole)) is M
  assert len(jax.tree.leaves(whole)) == 2


@pytest.mark.parametrize(
  'cls', [nnx.set_graph_mode, nnx.set_graph_updates], ids=['mode', 'updates']
)
def test_config_contexts(cls):
  stack = cls.get_stack()
  assert stack == [] and cls.current_value() is True
  with cls(False) as entered:
    assert entered is None and cls.get_stack() == [False]
    cls(True)  # a plain call replaces the innermost value
    assert cls.get_stack() == [True]
  assert cls.get_stack() == []

  @cls(False)
  def f():
    return cls.current_value()

  assert cls.get_stack() == [] and f() is False and cls.get_stack() == []
  cls(False)
  try:
    assert cls.get_stack() == [False]
    with cls(True):
      assert cls.get_stack() == [False, True]
    assert cls.get_stack() == [False]
  finally:
    cls.get_stack().clear()


def test_config_context_default_from_flag():
  previous = flax.config.nnx_graph_updates
  flax.config.update('nnx_graph_updates', False)
  try:
    assert nnx.set_graph_updates.get_default() is False
  finally:
    flax.config.update('nnx_graph_updates', previous)


def test_split_merge_contexts_share_references():
  m = M()
  with nnx.split_context() as ctx:
    assert isinstance(ctx, nnx.SplitContext) and ctx.ctxtag is None
    g1, s1 = ctx.split(m)
    g2, s2 = ctx.split(m)
  assert len(s2) == 0 and g2 != g1
  with nnx.merge_context() as ctx:
    assert isinstance(ctx, nnx.MergeContext)
    x1 = ctx.merge(g1, s1)
    x2 = ctx.merge(g2, s2)
  assert x1 is x2 and x1.a is not m.a
  with pytest.raises(KeyError):
    with nnx.merge_context() as ctx:
      ctx.merge(g2, s2)


def test_update_context_round_trip():
  m = M()
  with nnx.update_context('u') as uc:
    assert isinstance(uc, nnx.UpdateContext)
    assert nnx.current_update_context('u') is uc
    with nnx.split_context('u') as ctx:
      g, s = ctx.split(m)
    with nnx.merge_context('u', True) as ctx:
      inner = ctx.merge(g, s)
    assert inner is not m
    inner.a[...] = inner.a[...] + 1
    inner.d = nnx.Param(jnp.zeros(1))
    with nnx.split_context('u') as ctx:
      g2, s2 = ctx.split(inner)
    with nnx.merge_context('u', False) as ctx:
      outer = ctx.merge(g2, s2)
  assert outer is m and m.a[...].tolist() == [2.0, 2.0]
  assert type(m.d) is nnx.Param
  with pytest.raises(ValueError, match="No update context found for tag 'x'"):
    nnx.current_update_context('x')
  with pytest.raises(ValueError, match='No update context'):
    with nnx.split_context('x'):
      pass


def test_update_context_decorator():
  @nnx.update_context('t')
  def f():
    return nnx.current_update_context('t')

  assert isinstance(f(), nnx.UpdateContext)
  with pytest.raises(ValueError):
    nnx.current_update_context('t')


def test_to_tree_from_tree():
  m = M()
  tree = nnx.to_tree((m, m, 1, jnp.ones(1)))
  assert [type(x).__name__ for x in tree] == [
    'NodeStates',
    'NodeStates',
    'int',
    'ArrayImpl',
  ]
  assert tree[0].metadata is None and len(tree[0].states) == 1
  assert len(jax.tree.leaves(tree)) == 4
  a, b, c, _ = nnx.from_tree(tree)
  assert a is b and c == 1 and type(a) is M and a.a is not m.a
  with pytest.raises(ValueError, match='No graphdef available'):
    extract.NodeStates.from_states(tree[0].state).graphdef
  with pytest.raises(ValueError, match='Inconsistent aliasing'):
    nnx.to_tree((m, m), prefix=(0, 1))


def test_prefix():
  m = M()
  p = nnx.prefix(m, {nnx.Param: 0, nnx.BatchStat: None})
  assert p.state == {'a': 0, 'b': None}
  p2 = nnx.prefix((m, 1), lambda path, x: path)
  assert p2[0].state == {'a': (0, 'a'), 'b': (0, 'b')} and p2[1] == (1,)
  with pytest.raises(ValueError, match='No filter'):
    nnx.prefix(m, {nnx.Param: 0})


def test_extract_tuple_helpers():
  assert extract.find((1, 2, 3), 2) == 1 and extract.find((1,), 5) is None
  value, masked = extract.mask_at((1, 2, 3), 1)
  assert value == 2 and masked[0] == 1 and repr(masked[1]) == 'Mask()'
  assert extract.replace_at((1, 2, 3), 1, 'x') == (1, 'x', 3)
  assert extract.slice_at((1, 2, 3), 1) == (2, (1, 3))
  assert extract.mask_at((1, 2, 3), None) == (None, (1, 2, 3))
  assert extract.broadcast_prefix((0, None), ([1, 2], 3)) == [0, 0, None]


def test_graph_node_predicates():
  assert graphlib.is_node_leaf(nnx.Param(1)) and not graphlib.is_node_leaf(1)
  assert graphlib.is_node_type(nnx.Module) and graphlib.is_node_type(list)
  assert not graphlib.is_node_type(int) and not graphlib.is_node_type(nnx.Param)
  assert graphlib.is_pytree_node([1]) and not graphlib.is_pytree_node(M())
  assert graphlib.is_node_module(M()) and not graphlib.is_node_module(1)
  path = jax.tree_util.tree_flatten_with_path({'a': [1, {'b': 2}]})[0][1][0]
  assert graphlib.jax_to_nnx_path(path) == ('a', 1, 'b')
  m = M()
  (popped,) = graphlib.graph_pop(m, (nnx.BatchStat,))
  assert list(popped) == ['b'] and not hasattr(m, 'b')
  assert graphlib.Static(1) == graphlib.Static(1)
  assert repr(graphlib.NODE_ATTR) == 'NodeAttr()'
  assert type(graphlib.get_node_impl([1])).__name__ == 'PytreeNodeImpl'
  assert type(graphlib.get_node_impl(m)).__name__ == 'GraphNodeImpl'
  assert graphlib.get_node_impl(1) is None
  assert graphlib.get_node_impl(m).node_dict(m).keys() == {'a', 'c'}


def test_graphdef_typed_records():
  class R(nnx.Module):
    def __init__(self):
      self.a = nnx.Param(jnp.ones(2))
      self.b = self.a
      self.c = 3

  g = nnx.graphdef(R())
  node, var, ref = g.nodes
  assert isinstance(node, graphlib.NodeDef) and node.type is R
  assert (node.index, node.outer_index, node.num_attributes) == (0, None, 3)
  assert isinstance(var, graphlib.VariableDef) and var.type is nnx.Param
  assert isinstance(ref, graphlib.NodeRef) and ref.index == var.index
  assert g.attributes == [
    ('a', graphlib.NODE_ATTR),
    ('b', graphlib.NODE_ATTR),
    ('c', graphlib.Static(3)),
  ]
  assert node.with_same_outer_index().outer_index == 0
  assert node.with_same_outer_index().with_no_outer_index() == node
  assert g.with_same_outer_index().nodes[1].outer_index == var.index
  other = node.with_same_outer_index()
  assert node.with_matching_outer_index(other).outer_index == 0


def test_graphdef_from_records_round_trip():
  class R(nnx.Module):
    def __init__(self):
      self.a = nnx.Param(jnp.ones(2), tag='t')
      self.b = self.a
      self.c = 3
      self.l = nnx.List([nnx.BatchStat(jnp.ones(1))])
      self.d = nnx.data({'x': jnp.ones(1)})

  r = R()
  g = nnx.graphdef(r)
  g2 = graphlib.GraphDef(g.nodes, g.attributes, g.num_leaves)
  assert g2 == g and hash(g2) == hash(g)
  same = g.with_same_outer_index()
  assert graphlib.GraphDef(same.nodes, same.attributes, g.num_leaves) == same
  r2 = nnx.merge(g2, nnx.state(r))
  assert r2.a is r2.b and r2.c == 3 and r2.d['x'].tolist() == [1.0]
  with pytest.raises(ValueError, match='do not match'):
    graphlib.GraphDef(g.nodes, g.attributes + [('z', graphlib.LEAF_ATTR)], 1)


def test_ref_variables_index_their_array_reference():
  class Pair(nnx.Module):
    def __init__(self):
      self.a = nnx.Param(jnp.ones(2), ref=True)
      self.same = self.a
      self.b = nnx.Param(jnp.zeros(2), ref=True)
      self.c = nnx.Param(jnp.zeros(2))

  m = Pair()
  ref_map = nnx.graphlib.RefMap()
  graphdef, state = nnx.graphlib.flatten(m, ref_index=ref_map, graph=True)
  # the module, then each ref Variable followed by its jax.Ref, then the
  # plain Variable
  kinds = [
    'Ref' if isinstance(k, jax.Ref) else type(k).__name__ for k in ref_map
  ]
  assert kinds == ['Pair', 'Param', 'Ref', 'Param', 'Ref', 'Param']
  assert list(ref_map.values()) == list(range(6))
  assert len(state) == 3
  assert graphdef == nnx.graphdef(m)
  m2 = nnx.merge(graphdef, state)
  assert m2.a is m2.same and m2.a.ref and not m2.c.ref
  np.testing.assert_array_equal(m2.b[...], [0.0, 0.0])
