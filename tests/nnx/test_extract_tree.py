"""flax.nnx.extract helpers of tree-mode code: prefixes, extraction,
snapshots and updates, carry helpers and checks (results settled against
Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx import extract as E

K = jax.tree_util


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))


def test_broadcast_prefix2_and_map():
  assert E.broadcast_prefix2({'a': 1}, {'a': {'x': 1, 'y': 2}}) == (
    [(K.DictKey('a'),), (K.DictKey('a'),)],
    [1, 1],
  )
  p, b = nnx.Param(jnp.ones(2)), nnx.BatchStat(jnp.zeros(1))
  assert E.broadcast_prefix2(0, [p, b]) == ([(), ()], [0, 0])
  assert E.broadcast_prefix2(
    (0, None), ([1, 2], 3), prefix_leaf=lambda x: x is None
  ) == (
    [(K.SequenceKey(0),), (K.SequenceKey(0),), (K.SequenceKey(1),)],
    [0, 0, None],
  )
  # None is an empty subtree of the prefix unless prefix_leaf says so.
  with pytest.raises(ValueError, match='pytree structure error'):
    E.broadcast_prefix2((0, None), ([1, 2], 3))
  out = E.broadcast_prefix_map(
    lambda path, pre, x: (path, pre, x), (0, 1), ([1, 2], 3)
  )
  assert out == (
    [
      ((K.SequenceKey(0), K.SequenceKey(0)), 0, 1),
      ((K.SequenceKey(0), K.SequenceKey(1)), 0, 2),
    ],
    ((K.SequenceKey(1),), 1, 3),
  )
  out = E.broadcast_prefix_map(
    lambda path, pre, x, y: (pre, x + y), (0, 1), ([1, 2], 3), ([10, 20], 30)
  )
  assert out == ([(0, 11), (0, 22)], (1, 33))


def test_extract_insert_labeled_filter_kwargs():
  tree, taken = E.extract(lambda path, pre, x: pre == 1, (0, 1), ([1, 2], 3))
  assert tree == ([1, 2], E.ExtractIndex(0)) and taken == [3]
  assert E.insert(tree, [99]) == ([1, 2], 99)
  p = nnx.Param(jnp.ones(2))
  tree, taken = E.extract(
    lambda path, pre, x: isinstance(x, nnx.Variable),
    0,
    [p, 1],
    is_leaf=lambda x: isinstance(x, nnx.Variable),
  )
  assert tree == [E.ExtractIndex(0), 1] and taken[0] is p
  lt = E.labeled(a=1, b=2)
  assert repr(lt) == 'LabeledTuple(a=1, b=2)' and lt.b == 2

  def g(a, *, b=0):
    pass

  assert E.filter_kwargs(g, a=1, b=2, c=3) == {'a': 1, 'b': 2}
  assert E.filter_kwargs(lambda **kw: None, a=1, c=3) == {'a': 1, 'c': 3}


def test_structure_copies():
  p = nnx.Param(jnp.ones(2))
  tree = [p, 3]
  new = E.copy_var_structure(tree)
  assert new is not tree and new[0] is p
  m = M()
  copy = E.copy_var_structure(m)
  assert copy is not m and copy.w is m.w
  current, before = E.snapshot(tree)
  assert current[0] is p and before[0] is not p
  assert isinstance(before[0], nnx.Param)

  def f(a, b):
    a[0] = 5
    return a, b

  lst = [1, 2]
  wrapped = E.treemap_copy_args(f)
  assert wrapped.__name__ == 'f'
  assert wrapped(lst, 3) == ([5, 2], 3) and lst == [1, 2]
  cleared = E.clear_non_graph_nodes([m, {'a': 1}, jnp.ones(1), 'x'])
  assert cleared[0] is m and cleared[1:] == [{'a': None}, None, None]


def test_variable_changed():
  p = nnx.Param(jnp.ones(2))
  assert not E.variable_changed(p, p)
  assert not E.variable_changed(p.copy(), p)
  assert E.variable_changed(p.copy(jnp.ones(2)), p)
  assert E.variable_changed(nnx.BatchStat(p.get_raw_value()), p)
  tagged = p.copy()
  tagged.set_metadata('tag', 1)
  assert E.variable_changed(tagged, p)


def test_updates():
  u = E.Updates()
  assert repr(u) == 'Updates(_keys=[], _values=[])' and len(u) == 0
  p = nnx.Param(jnp.ones(2))
  u.append((K.DictKey('a'),), p)
  assert len(u) == 1 and list(u) == [((K.DictKey('a'),), p)]
  assert u[0] == ((K.DictKey('a'),), p) and u[(K.DictKey('a'),)] is p
  assert u.paths == [(K.DictKey('a'),)] and u.leaves == [p]
  with pytest.raises(NotImplementedError, match='Slicing'):
    u[0:1]
  with pytest.raises(KeyError):
    u[(K.DictKey('b'),)]
  assert E.Updates.create([((K.GetAttrKey('w'),), p)]).paths == [
    (K.GetAttrKey('w'),)
  ]


def test_get_and_apply_updates():
  tree = [nnx.Param(jnp.ones(2)), nnx.BatchStat(jnp.zeros(1)), 3]
  current, before = E.snapshot(tree)
  current[0][...] = jnp.full(2, 2.0)
  [updates] = E.get_updates(current, before)
  assert updates.paths == [(K.SequenceKey(0),)]
  assert updates.leaves[0] is tree[0]
  both = E.get_updates(
    current,
    before,
    prefix=[0, None, None],
    known_prefixes=(0, None),
    keep_fn=lambda *a: True,
  )
  assert [u.paths for u in both] == [
    [(K.SequenceKey(0),)],
    [(K.SequenceKey(1),)],
  ]
  with pytest.raises(KeyError):
    E.get_updates(current, before, prefix=0)

  class ByType(E.PrefixMapping):
    def map_prefix(self, path, variable, /):
      return 'p' if isinstance(variable, nnx.Param) else 'o'

  groups = E.get_updates(
    current,
    before,
    prefix=ByType(),
    known_prefixes=('p', 'o'),
    keep_fn=lambda *a: True,
  )
  assert [len(g) for g in groups] == [1, 1]
  with pytest.raises(TypeError, match='abstract'):
    E.PrefixMapping()

  target = nnx.Param(jnp.ones(2))
  path = (K.GetAttrKey('a'), K.GetAttrKey('w'))
  E.apply_updates(
    {path: target},
    [E.Updates.create([(path, nnx.Param(jnp.full(2, 9.0), tag=1))])],
  )
  np.testing.assert_array_equal(target[...], [9.0, 9.0])
  assert target.tag == 1
  with pytest.raises(RuntimeError, match='no Variable at path'):
    E.apply_updates({}, [E.Updates.create([(path, target)])])


def test_to_masked():
  p, b = nnx.Param(jnp.ones(2)), nnx.BatchStat(jnp.zeros(1))
  out = E.to_masked([p, b, jnp.ones(1)], [E.Updates()])
  assert [type(x).__name__ for x in out] == ['Param', 'BatchStat', 'NoneType']
  assert out[0] is not p and out[0].get_raw_value() is None
  assert jax.tree.leaves(out) == []
  with pytest.raises(TypeError, match='list of Updates'):
    E.to_masked([p], [1])


def test_carry_helpers():
  a, b = nnx.Param(jnp.ones(2)), nnx.Param(jnp.zeros(2))
  out = E.update_carry_variables([a, 1], [b, 2])
  assert out[0] is a and out[1] == 2
  np.testing.assert_array_equal(a[...], [0.0, 0.0])
  with pytest.raises(AttributeError, match='carry output'):
    E.update_carry_variables([a], [1])
  m = M()
  E.check_same_variables([m.w, 1], [m.w, 2])
  E.check_same_variables((m,), (m,), 'jit')
  with pytest.raises(ValueError, match='scan Variable identity must be'):
    E.check_same_variables((m,), (M(),), 'scan')
  with pytest.raises(ValueError, match='pytree structure error'):
    E.check_same_variables([m.w, 1], [m.w])


def test_check_no_aliases_and_prefix():
  m = M()
  assert E.check_no_aliases('jit', a=[m, 2]) == {
    (K.GetAttrKey('a'), K.SequenceKey(0), K.GetAttrKey('w')): m.w
  }
  with pytest.raises(ValueError, match=r'Duplicate Param[\s\S]*\.a\.w'):
    E.check_no_aliases('jit', a=m, b=m)
  with pytest.raises(ValueError, match='not supported'):
    E.check_no_aliases('jit', a=m, check=('a',))
  assert E.check_prefix(0, 'in_axes', 'vmap', True, True) == [0]
  assert E.check_prefix((None, 0), 'in_axes', 'vmap', False, False) == [0, None]
  assert E.check_prefix(
    (None, 0), 'in_axes', 'vmap', False, False, none_leaf=False
  ) == [0]
  axes = nnx.StateAxes({...: 0})
  assert E.check_prefix(axes, 'in_axes', 'vmap', True, True) == [axes]
  with pytest.raises(ValueError, match='`in_axes`.*StateAxes'):
    E.check_prefix(axes, 'in_axes', 'vmap', False, True)


def test_check_consistent_aliasing2():
  m = M()
  seen = {}
  E.check_consistent_aliasing2(m, 0, node_prefixes=seen)
  assert list(seen.values()) == [[(('w',), 0)]]
  with pytest.raises(ValueError, match='Inconsistent aliasing') as e:
    E.check_consistent_aliasing2(m, 1, base_path=('x',), node_prefixes=seen)
  assert 'Node: Param\n  w: 0\n  x/w: 1' in str(e.value)


def test_to_tree2_from_tree2():
  m = M()
  tree = E.to_tree2((m, m.w, 3))
  assert [type(x).__name__ for x in tree] == ['TreeState', 'TreeState', 'int']
  assert list(tree[0].state.keys()) == ['w']
  assert tree[1].graphdef.num_leaves == 0  # a reference to m.w
  a, w, n = E.from_tree2(tree)
  assert a is not m and a.w is m.w and w is m.w and n == 3
  mapped = E.from_tree2(jax.tree.map(lambda x: x * 2, tree))
  assert mapped[0].w is not m.w
  np.testing.assert_array_equal(mapped[0].w[...], [2.0, 2.0])
  fn = lambda path, x: 0  # noqa: E731
  assert E.to_tree2(m, prefix_fn=fn).prefix_fn.value is fn
  with pytest.raises(ValueError, match='Inconsistent aliasing'):
    E.to_tree2((m, m), prefix=(0, 1))
  E.to_tree2((m, m), prefix=(0, 1), check_aliasing=False)
