"""State and FlatState functions: pure dicts, flat states, split/merge/
filter/map, diff and the traversals module (values settled against Flax
0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx import filterlib, statelib, traversals


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))
    self.layers = nnx.List([nnx.Param(jnp.full((1,), 2.0))])


def _pure_lists(d):
  return jax.tree.map(lambda x: np.asarray(x).tolist(), d)


def test_to_pure_dict_and_back():
  s = nnx.state(M())
  pure = nnx.to_pure_dict(s)
  assert _pure_lists(pure) == {
    'a': [1.0, 1.0],
    'b': [0.0],
    'layers': {0: [2.0]},
  }
  assert s.to_pure_dict().keys() == pure.keys()
  nnx.replace_by_pure_dict(s, jax.tree.map(lambda x: x + 10, pure))
  assert _pure_lists(nnx.to_pure_dict(s)) == {
    'a': [11.0, 11.0],
    'b': [10.0],
    'layers': {0: [12.0]},
  }


def test_to_pure_dict_extract_fn_sees_every_leaf():
  s = nnx.State({'a': nnx.Param(1), 'b': 3})
  out = nnx.to_pure_dict(s, extract_fn=lambda v: ('x', type(v).__name__))
  assert out == {'a': ('x', 'Param'), 'b': ('x', 'int')}


def test_replace_by_pure_dict_string_int_keys_and_replace_fn():
  s = nnx.State({'a': nnx.Param(1), 'l': {0: nnx.Param(2)}})
  nnx.replace_by_pure_dict(s, {'a': 5, 'l': {'0': 7}})
  assert nnx.to_pure_dict(s) == {'a': 5, 'l': {0: 7}}
  s = nnx.State({'a': nnx.Param(1)})
  s.replace_by_pure_dict({'a': 5}, replace_fn=lambda v, x: v.replace(x * 2))
  assert type(s['a']) is nnx.Param and s['a'].get_value() == 10


def test_replace_by_pure_dict_unknown_key():
  s = nnx.State({'a': nnx.Param(1)})
  with pytest.raises(ValueError, match=r"not available in state: \('b',\)"):
    nnx.replace_by_pure_dict(s, {'b': 2})


def test_restore_int_paths():
  out = nnx.restore_int_paths({'layers': {'0': 1}, 'x': {'1': {'2': 3}}})
  assert out == {'layers': {0: 1}, 'x': {1: {2: 3}}}


def test_flat_state_round_trip():
  s = nnx.state(M())
  fs = nnx.to_flat_state(s)
  assert isinstance(fs, nnx.FlatState)
  assert fs.paths == (('a',), ('b',), ('layers', 0))
  assert isinstance(fs.paths, tuple) and isinstance(fs.leaves, list)
  assert fs[0][0] == ('a',) and fs[0][1] is s['a']
  assert fs[1:].paths == (('b',), ('layers', 0))
  back = nnx.from_flat_state(fs)
  assert back['layers'][0] is s['layers'][0]
  assert nnx.from_flat_state([(('a', 0), 1)]) == {'a': {0: 1}}
  assert nnx.from_flat_state({('x',): 2}, cls=nnx.State) == {'x': 2}


def test_flat_state_constructor_and_helpers():
  a, b, c = nnx.Param(1), nnx.BatchStat(2), nnx.Param(3)
  fs = nnx.FlatState([(('b',), b), (('a', 'x'), a)], sort=True)
  assert fs.paths == (('a', 'x'), ('b',)) and fs.leaves == [a, b]
  unsorted = nnx.FlatState([(('b',), b), (('a', 'x'), a)], sort=False)
  assert unsorted.paths == (('b',), ('a', 'x'))
  with pytest.raises(TypeError):
    nnx.FlatState([(('a',), a)])  # sort is required
  fs3 = nnx.FlatState.from_sorted_keys_values((('a',), ('c',)), [a, c])
  assert fs3.paths == (('a',), ('c',))
  merged = nnx.FlatState.merge(fs, fs3)
  assert merged.paths == (('a',), ('a', 'x'), ('b',), ('c',))
  assert fs.filter(nnx.Param).paths == (('a', 'x'),)
  params, rest = fs.split(nnx.Param, ...)
  assert params.paths == (('a', 'x'),) and rest.paths == (('b',),)
  with pytest.raises(TypeError, match='indices'):
    fs['a']


def test_split_merge_filter_map_state():
  s = nnx.state(M())
  params, stats = nnx.split_state(s, nnx.Param, ...)
  assert sorted(params) == ['a', 'layers'] and list(stats) == ['b']
  assert list(nnx.filter_state(s, nnx.BatchStat)) == ['b']
  merged = nnx.merge_state(params, stats)
  assert sorted(merged) == ['a', 'b', 'layers']
  assert nnx.merge_state({'a': 1}, {'b': {'c': 2}}, {'a': 5}) == {
    'a': 5,
    'b': {'c': 2},
  }
  named = nnx.map_state(lambda path, v: (path, type(v).__name__), s)
  assert named['layers'][0] == (('layers', 0), 'Param')
  scaled = s.map(lambda path, v: v.replace(v[...] * 0 + len(path)))
  assert scaled['layers'][0][...].tolist() == [2.0]
  assert s['a'][...].tolist() == [1.0, 1.0]  # map makes a new State
  with pytest.raises(ValueError, match='Non-exhaustive'):
    nnx.split_state(s, nnx.Param)


def test_state_requires_a_mapping_and_takes_pairs():
  with pytest.raises(TypeError):
    nnx.State()
  s = nnx.State(iter([('a', 1), ('b', {'c': 2})]))
  assert s == {'a': 1, 'b': {'c': 2}}


def test_diff_and_create_path_filters():
  s1 = nnx.State({'a': {'x': 1, 'y': 2}, 'b': 3})
  assert statelib.diff(s1, nnx.State({'a': {'x': 5}})) == {
    'a': {'y': 2},
    'b': 3,
  }
  filters = statelib.create_path_filters(nnx.State({'a': {'x': 1}, 'c': 4}))
  assert list(filters.values()) == [1, 4]
  assert [repr(f) for f in filters] == ["PathIn(('a', 'x'))", "PathIn(('c',))"]
  assert all(isinstance(f, filterlib.PathIn) for f in filters)


def test_nested_state_repr():
  text = repr(statelib.NestedStateRepr(nnx.State({'a': {'b': 1}})))
  assert text == "{\n  'a': {\n    'b': 1\n  }\n}"


def test_traversals():
  xs = {'a': {'b': 1, 'c': {}}, 'd': 2}
  assert traversals.flatten_mapping(xs) == {('a', 'b'): 1, ('d',): 2}
  flat = traversals.flatten_mapping(xs, keep_empty_nodes=True)
  assert flat[('a', 'c')] is traversals.empty_node
  assert repr(traversals.empty_node) == '_EmptyNode()'
  assert traversals.unflatten_mapping(flat) == xs
  assert traversals.flatten_mapping(xs, sep='/') == {'a/b': 1, 'd': 2}
  assert traversals.flatten_mapping(
    {'a': {'b': 1}, 'd': 2}, is_leaf=lambda path, x: path == ('a',)
  ) == {('a',): {'b': 1}, ('d',): 2}
  assert traversals.flatten_to_sequence({'b': {'x': 1}, 'a': 2}) == [
    (('b', 'x'), 1),
    (('a',), 2),
  ]
  assert traversals.unflatten_mapping({'a/b': 1}, sep='/') == {'a': {'b': 1}}
  assert traversals.unflatten_mapping([(('a', 'b'), 1)]) == {'a': {'b': 1}}
  assert traversals.flatten_mapping(nnx.State({'a': {'b': 1}})) == {
    ('a', 'b'): 1
  }
  with pytest.raises(TypeError, match='Mapping'):
    traversals.flatten_mapping([1])
  assert traversals.struct.__name__ == 'flax.struct'


def test_filterlib_names():
  n = nnx.Not(nnx.Param)
  assert n(('a',), nnx.BatchStat(1)) and not n(('a',), nnx.Param(1))
  assert repr(filterlib.PathIn(('a', 'x'))) == "PathIn(('a', 'x'))"
  assert filterlib.Key is __import__('flax').typing.Key
  assert filterlib.HasTag.__annotations__ == {'tag': str}


def test_state_pickles_and_copies():
  import copy
  import pickle

  class Linear(nnx.Module):
    def __init__(self):
      self.kernel = nnx.Param(jnp.arange(6.0).reshape(2, 3))
      self.bias = nnx.Param(jnp.zeros((3,)))

  m = Linear()
  st = nnx.state(m)
  st2 = pickle.loads(pickle.dumps(st))
  assert type(st2) is nnx.State and list(st2.keys()) == ['bias', 'kernel']
  np.testing.assert_array_equal(st2['kernel'][...], m.kernel[...])
  assert copy.deepcopy(st)['kernel'] is not st['kernel']
  assert copy.copy(st) == st
  flat = pickle.loads(pickle.dumps(nnx.to_flat_state(st)))
  assert [p for p, _ in flat] == [('bias',), ('kernel',)]
