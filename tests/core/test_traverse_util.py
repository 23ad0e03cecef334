"""Tests of flax.traverse_util."""

import collections
import doctest
import pickle
from typing import Any

import jax.numpy as jnp
import pytest

from flax import struct
from flax import traverse_util
from flax.core import FrozenDict

# Traversals are deprecated (every one made warns, as in Flax 0.12.8); the
# warning itself is checked in test_traversals_warn_deprecation.
pytestmark = pytest.mark.filterwarnings(
  'ignore:`flax.traverse_util.Traversal` will be deprecated:DeprecationWarning'
)


def test_doctests():
  assert doctest.testmod(traverse_util).failed == 0


def test_flatten_dict():
  xs = {'foo': 1, 'bar': {'a': 2, 'b': {}}}
  assert traverse_util.flatten_dict(xs) == {('foo',): 1, ('bar', 'a'): 2}
  assert traverse_util.flatten_dict(xs, sep='/') == {'foo': 1, 'bar/a': 2}
  flat = traverse_util.flatten_dict(xs, keep_empty_nodes=True)
  assert flat == {
    ('foo',): 1,
    ('bar', 'a'): 2,
    ('bar', 'b'): traverse_util.empty_node,
  }
  assert traverse_util.flatten_dict({}, keep_empty_nodes=True) == {}


def test_flatten_frozen_dict_and_tuple_leaves():
  xs = FrozenDict({'a': {'b': (1, 2)}})
  assert traverse_util.flatten_dict(xs) == {('a', 'b'): (1, 2)}


def test_flatten_is_leaf():
  xs = {'a': {'b': {'c': 1}}, 'd': {'e': 2}}
  flat = traverse_util.flatten_dict(
    xs, is_leaf=lambda path, value: path == ('a', 'b')
  )
  assert flat == {('a', 'b'): {'c': 1}, ('d', 'e'): 2}


def test_flatten_rejects_non_dicts():
  with pytest.raises(TypeError, match='expected'):
    traverse_util.flatten_dict([1, 2])


def test_unflatten_dict():
  flat = {('foo',): 1, ('bar', 'a'): 2, ('bar', 'b'): traverse_util.empty_node}
  assert traverse_util.unflatten_dict(flat) == {
    'foo': 1,
    'bar': {'a': 2, 'b': {}},
  }
  assert traverse_util.unflatten_dict({'a/b': 1, 'c': 2}, sep='/') == {
    'a': {'b': 1},
    'c': 2,
  }


def test_flatten_unflatten_roundtrip_with_empty_nodes():
  xs = {'a': {'b': 1, 'c': {}}, 'd': {'e': {'f': 2}}}
  flat = traverse_util.flatten_dict(xs, keep_empty_nodes=True, sep='.')
  assert traverse_util.unflatten_dict(flat, sep='.') == xs


def test_empty_node_repr_and_pickle():
  assert repr(traverse_util.empty_node) == '_EmptyNode()'
  assert pickle.loads(pickle.dumps(traverse_util.empty_node)) is (
    traverse_util.empty_node
  )


def test_path_aware_map():
  params = {'a': {'x': 10, 'y': 3}, 'b': {'x': 20}, 'c': {}}
  result = traverse_util.path_aware_map(
    lambda path, x: x + 5 if 'x' in path else -x, params
  )
  assert result == {'a': {'x': 15, 'y': -3}, 'b': {'x': 25}, 'c': {}}
  seen = []
  traverse_util.path_aware_map(
    lambda path, x: seen.append(path), FrozenDict({'k': {'w': 1}})
  )
  assert seen == [('k', 'w')]


@struct.dataclass
class Foo:
  foo: Any = None
  bar: Any = None


def test_traverse_attr():
  assert list(traverse_util.TraverseAttr('foo').iterate(Foo(foo=1))) == [1]
  assert traverse_util.TraverseAttr('foo').update(
    lambda x: x + 1, Foo(foo=1)
  ) == Foo(foo=2)
  nt = collections.namedtuple('NT', 'foo bar')(1, 2)
  assert traverse_util.TraverseAttr('bar').update(str, nt) == (1, '2')
  # Other objects are copied and the attribute set (read-only ones fail).
  with pytest.raises(AttributeError, match='readonly attribute'):
    traverse_util.TraverseAttr('real').update(lambda x: x, 1j)


def test_identity_each_item_chain():
  data = [{'foo': 1, 'bar': 2}, {'foo': 3, 'bar': 4}]
  traversal = traverse_util.t_identity.each()['foo']
  assert list(traversal.iterate(data)) == [1, 3]
  updated = traversal.update(lambda x: x * 10, data)
  assert updated == [{'foo': 10, 'bar': 2}, {'foo': 30, 'bar': 4}]
  assert data == [{'foo': 1, 'bar': 2}, {'foo': 3, 'bar': 4}]


def test_attribute_chain_update():
  data = {'foo': Foo(bar=2)}
  updated = traverse_util.t_identity['foo'].bar.update(lambda x: x + x, data)
  assert updated == {'foo': Foo(bar=4)}
  assert data == {'foo': Foo(bar=2)}


def test_item_slices_and_tuples():
  t = traverse_util.t_identity[1:3]
  assert list(t.iterate([0, 1, 2, 3])) == [1, 2]
  assert t.update(lambda x: -x, (0, 1, 2, 3)) == (0, -1, -2, 3)
  assert traverse_util.TraverseItem(0).update(str, [1, 2]) == ['1', 2]
  # A list slice goes to ``fn`` as one sublist (a tuple slice per element).
  assert traverse_util.TraverseItem(slice(0, 2)).update(
    lambda x: x * 2, [1, 2, 3]
  ) == [1, 2, 1, 2, 3]
  merged = traverse_util.TraverseMerge(
    traverse_util.TraverseItem(slice(0, 2)), traverse_util.TraverseItem(2)
  )
  assert merged.update(lambda x: x * 3, [1, 2, 3]) == [1, 2, 3, 2, 1, 2, 3]
  fd = FrozenDict({'a': 1})
  new = traverse_util.TraverseItem('a').update(lambda x: x + 1, fd)
  assert isinstance(new, FrozenDict) and new['a'] == 2


def test_each_on_tuples_and_dicts():
  each = traverse_util.TraverseEach()
  assert each.update(lambda x: x + 1, (1, 2)) == (2, 3)
  assert each.update(lambda x: x + 1, {'a': 1}) == {'a': 2}
  assert list(each.iterate({'a': 1, 'b': 2})) == [1, 2]


def test_filter_merge_set_tree():
  t = traverse_util.t_identity.each().filter(lambda x: x % 2 == 0)
  assert list(t.iterate([1, 2, 3, 4])) == [2, 4]
  assert t.set([20, 40], [1, 2, 3, 4]) == [1, 20, 3, 40]
  with pytest.raises(ValueError, match='Not enough values'):
    t.set([20], [1, 2, 3, 4])
  with pytest.raises(ValueError, match='Too many values'):
    t.set([20, 40, 60], [1, 2, 3, 4])

  merged = traverse_util.t_identity.merge(
    traverse_util.t_identity['a'], traverse_util.t_identity['b']
  )
  assert isinstance(merged, traverse_util.TraverseCompose)
  assert list(merged.iterate({'a': 1, 'b': 2, 'c': 3})) == [1, 2]
  assert merged.update(lambda x: 0, {'a': 1, 'b': 2, 'c': 3}) == {
    'a': 0,
    'b': 0,
    'c': 3,
  }
  # merge composes this traversal with the union of the others: they
  # select inside what this one selects.
  rows = [{'foo': 1, 'bar': 2}, {'foo': 3, 'bar': 4}]
  inner = traverse_util.t_identity.each().merge(
    traverse_util.TraverseItem('foo'), traverse_util.TraverseItem('bar')
  )
  assert list(inner.iterate(rows)) == [1, 2, 3, 4]
  assert inner.update(lambda x: x * 10, rows) == [
    {'foo': 10, 'bar': 20},
    {'foo': 30, 'bar': 40},
  ]
  assert list(traverse_util.t_identity[0].merge().iterate(rows)) == []

  tree = traverse_util.t_identity.tree()
  assert list(tree.iterate({'a': [1, 2], 'b': 3})) == [1, 2, 3]
  assert tree.update(lambda x: x * 2, {'a': [1, 2]}) == {'a': [2, 4]}


def test_model_param_traversal():
  params = {
    'Dense_0': {'kernel': jnp.ones(2), 'bias': jnp.zeros(2)},
    'Dense_1': {'kernel': jnp.ones(3), 'bias': jnp.zeros(3)},
    'empty': {},
  }
  seen = []
  kernels = traverse_util.ModelParamTraversal(
    lambda path, _: seen.append(path) or 'kernel' in path
  )
  values = list(kernels.iterate(params))
  assert [v.shape for v in values] == [(2,), (3,)]
  assert seen == [
    '/Dense_0/bias',
    '/Dense_0/kernel',
    '/Dense_1/bias',
    '/Dense_1/kernel',
  ]
  all_false = {
    'Dense_0': {'kernel': False, 'bias': False},
    'Dense_1': {'kernel': False, 'bias': False},
    'empty': {},
  }
  mask = kernels.update(lambda _: True, all_false)
  assert mask == {
    'Dense_0': {'kernel': True, 'bias': False},
    'Dense_1': {'kernel': True, 'bias': False},
    'empty': {},
  }
  frozen = kernels.update(lambda _: True, FrozenDict(all_false))
  assert isinstance(frozen, FrozenDict) and frozen == mask
  with pytest.raises(ValueError, match='Can only traverse'):
    list(kernels.iterate([1]))


def test_each_traversal_of_containers():
  import collections

  from flax.core import freeze

  each = traverse_util.TraverseEach()
  assert each.update(lambda v: v + 1, {'a': 1}) == {'a': 2}
  assert each.update(lambda v: v * 3, (1, 2)) == (3, 6)
  assert list(each.iterate({'a': 1})) == [1]
  # FrozenDicts iterate over their keys and namedtuples are refused.
  assert list(each.iterate(freeze({'a': 1}))) == ['a']
  point = collections.namedtuple('Point', 'a b')
  for value in (freeze({'a': 1}), point(1, 2), 3):
    with pytest.raises(ValueError, match='Only the entries of a list'):
      each.update(lambda v: v, value)


def test_traverse_attr_updates_plain_objects():
  class Obj:
    def __init__(self, x):
      self.x = x

  t = traverse_util.TraverseAttr('x')
  o = Obj(1)
  assert list(t.iterate(o)) == [1]
  new = t.update(lambda v: v + 1, o)
  assert type(new) is Obj and new is not o
  assert (new.x, o.x) == (2, 1)


@pytest.mark.filterwarnings('error')
def test_traversals_warn_deprecation():
  match = '`flax.traverse_util.Traversal` will be deprecated'
  with pytest.warns(DeprecationWarning, match=match) as record:
    traverse_util.TraverseItem('a')
  assert len(record) == 1
  # Each traversal of a chain is one: each() composes two.
  with pytest.warns(DeprecationWarning, match=match) as record:
    traverse_util.t_identity.each()
  assert len(record) == 2

  class Mine(traverse_util.Traversal):
    def __init__(self):
      pass

    def update(self, fn, inputs):
      return fn(inputs)

    def iterate(self, inputs):
      yield inputs

  with pytest.warns(DeprecationWarning, match=match):
    Mine()
  # Flattening helpers do not warn, nor does the module's identity.
  assert traverse_util.flatten_dict({'a': 1}) == {('a',): 1}
  assert list(traverse_util.t_identity.iterate(3)) == [3]
