"""Tests of flax.cursor."""

import collections
import dataclasses
import doctest
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

from flax import cursor as cursor_lib
from flax import errors
from flax import struct
from flax.core import FrozenDict
from flax.cursor import cursor


def test_doctests():
  assert doctest.testmod(cursor_lib).failed == 0


@struct.dataclass
class Inner:
  w: Any
  tag: str = struct.field(pytree_node=False, default='t')


Pair = collections.namedtuple('Pair', 'left right')


def test_set_builds_copies_of_every_container():
  obj = {
    'frozen': FrozenDict({'a': 1}),
    'list': [1, 2],
    'tuple': (1, 2),
    'pair': Pair(1, 2),
    'data': Inner(w=1),
  }
  c = cursor(obj)
  c['frozen']['a'] = 10
  c['list'][1] = 20
  c['tuple'][0] = 30
  c['pair'].right = 40
  c['data'].w = 50
  new = c.build()
  assert new == {
    'frozen': FrozenDict({'a': 10}),
    'list': [1, 20],
    'tuple': (30, 2),
    'pair': Pair(1, 40),
    'data': Inner(w=50),
  }
  assert isinstance(new['frozen'], FrozenDict)
  assert type(new['pair']) is Pair
  assert obj['list'] == [1, 2] and obj['data'] == Inner(w=1)


def test_reading_does_not_copy():
  obj = {'a': {'b': [1]}, 'c': 2}
  c = cursor(obj)
  assert c['a']['b'][0] == 1
  assert c.build() is obj
  c['c'] = 3
  new = c.build()
  assert new['a'] is obj['a'] and new['c'] == 3


def test_set_returns_root():
  obj = {'a': [0, (1, 2)]}
  assert cursor(obj)['a'][1][0].set(9) == {'a': [0, (9, 2)]}
  assert cursor(obj).set(5) == 5


def test_assign_then_navigate_into_new_value():
  c = cursor({'a': 1})
  c['a'] = {'b': 2}
  c['a']['b'] = 3
  assert c.build() == {'a': {'b': 3}}


def test_apply_update_on_params():
  params = {
    'Dense_0': {'kernel': jnp.ones((2, 2)), 'bias': jnp.zeros(2)},
    'Dense_1': {'kernel': jnp.ones((2, 1)), 'bias': jnp.zeros(1)},
  }
  paths = []

  def update_fn(path, value):
    paths.append(path)
    if 'kernel' in path:
      return value * 2 + 1
    if 'Dense_1' in path and 'bias' in path:
      return value - 1
    return value

  new = cursor(params).apply_update(update_fn).build()
  np.testing.assert_array_equal(new['Dense_0']['kernel'], 3 * np.ones((2, 2)))
  np.testing.assert_array_equal(new['Dense_1']['bias'], [-1.0])
  assert new['Dense_0']['bias'] is params['Dense_0']['bias']
  assert paths[:3] == ['Dense_0', 'Dense_0/kernel', 'Dense_0/bias']


def test_apply_update_stops_descending_at_replaced_nodes():
  obj = {'a': {'b': 1}, 'c': {'d': 2}}
  seen = []

  def update_fn(path, value):
    seen.append(path)
    return {'new': True} if path == 'a' else value

  assert cursor(obj).apply_update(update_fn).build() == {
    'a': {'new': True},
    'c': {'d': 2},
  }
  assert seen == ['a', 'c', 'c/d']


def test_find_and_find_all():
  obj = {'layers': [Inner(w=1), Inner(w=2)], 'other': Inner(w=3)}
  found = cursor(obj).find(lambda path, v: path == 'layers/1/w')
  assert found.set(20) == {
    'layers': [Inner(w=1), Inner(w=20)],
    'other': Inner(w=3),
  }
  c = cursor(obj)
  for sub in c.find_all(lambda path, v: isinstance(v, Inner)):
    sub.w = sub.w * 10
  assert c.build() == {
    'layers': [Inner(w=10), Inner(w=20)],
    'other': Inner(w=30),
  }
  with pytest.raises(errors.CursorFindError, match='No object found'):
    cursor(obj).find(lambda path, v: False)
  with pytest.raises(errors.CursorFindError, match='More than one'):
    cursor({'a': [1], 'b': [2]}).find(lambda path, v: isinstance(v, list))
  # Two matches are reported through the cursors' truth value, which is
  # their values' length: empty containers read as no match, objects without
  # a length raise TypeError (as in Flax 0.12.8).
  with pytest.raises(errors.CursorFindError, match='No object found'):
    cursor({'a': [], 'b': [2]}).find(lambda path, v: isinstance(v, list))
  with pytest.raises(TypeError, match="object of type 'Inner' has no len"):
    cursor(obj).find(lambda path, v: isinstance(v, Inner))


def test_value_like_behaviour():
  c = cursor({'x': 3, 'l': [1, 2, 3]})
  assert c['x'] + 1 == 4 and 1 + c['x'] == 4
  assert c['x'] * c['x'] == 9 and -c['x'] == -3
  assert c['x'] > 2 and c['x'] == 3 and bool(c['l'])
  with pytest.raises(TypeError, match="object of type 'int' has no len"):
    bool(c['x'])
  assert str(c['l']) == '[1, 2, 3]'
  assert len(c['l']) == 3
  assert [x == i + 1 for i, x in enumerate(c['l'])] == [True] * 3
  assert [x._obj for x in reversed(c['l'])] == [3, 2, 1]
  with pytest.raises(NotImplementedError, match='only implemented for tuples'):
    iter(c)
  assert repr(cursor(1)) == 'Cursor(\n  _obj=1,\n  _changes={}\n)'


def test_errors_for_unsupported_types():
  with pytest.raises(AttributeError, match='Attribute missing not found in'):
    cursor({'a': 1}).missing
  c = cursor(object())
  c.x = 1
  with pytest.raises(TypeError, match='cannot build'):
    c.build()
  with pytest.raises(errors.TraverseTreeError):
    cursor({}).apply_update(None)


def test_public_helpers():
  import collections
  import inspect
  import typing

  from flax import cursor as cursor_lib

  point = collections.namedtuple('Point', 'a b')
  assert cursor_lib.is_named_tuple(point(1, 2))
  assert cursor_lib.is_named_tuple(typing.NamedTuple('N', [('a', int)])(1))
  assert not cursor_lib.is_named_tuple((1,))
  params = inspect.signature(cursor_lib.Cursor).parameters
  assert params['parent_key'].default is inspect.Parameter.empty


def test_find_all_over_nested_containers_and_repr_of_changes():
  import collections

  from flax import struct

  nt = collections.namedtuple('NT', 'a b c')

  @struct.dataclass
  class S:
    x: int
    y: dict

  tree = {
    'a': [1, (2, 3), nt(4, 5, {'z': 6})],
    'b': {'c': 7, 'd': S(8, {'e': 9})},
  }
  c = cursor(tree)
  visited = []
  list(c.find_all(lambda path, obj: visited.append(path) or False))
  assert visited == [
    'a', 'a/0', 'a/1', 'a/1/0', 'a/1/1', 'a/2', 'a/2/a', 'a/2/b', 'a/2/c',
    'a/2/c/z', 'b', 'b/c', 'b/d', 'b/d/x', 'b/d/y', 'b/d/y/e',
  ]  # fmt: skip
  for x in c.find_all(lambda path, obj: isinstance(obj, int) and obj > 5):
    x.set(100)
  built = c.build()
  assert built['a'][2].c == {'z': 100}
  assert built['b']['c'] == 100 and built['b']['d'] == S(100, {'e': 100})
  assert (c['a'][2].a._obj, c['a'][2][1]._obj) == (4, 5)

  small = cursor({'a': [1, 2], 'b': 3})
  small['a'][0] = 10
  small.b = 3  # the same value is still a change
  assert repr(small) == (
    "Cursor(\n  _obj={'a': [1, 2], 'b': 3},\n  _changes={\n"
    "    'a': Cursor(\n"
    '           _obj=[1, 2],\n'
    '           _changes={\n'
    '             0: Cursor(\n'
    '                  _obj=10,\n'
    '                  _changes={}\n'
    '                )\n'
    '           }\n'
    '         ),\n'
    "    'b': Cursor(\n"
    '           _obj=3,\n'
    '           _changes={}\n'
    '         )\n'
    '  }\n)'
  )
  assert small.build() == {'a': [10, 2], 'b': 3}


def test_find_errors_and_iteration_of_non_sequences():
  import collections

  c = cursor({'a': {'x': {'k': 1}}, 'b': [{'k': 2}]})
  with pytest.raises(
    errors.CursorFindError,
    match=r"following paths: \['a'\]\['x'\] and \['b'\]\[0\]",
  ):
    c.find(lambda path, obj: isinstance(obj, dict) and 'k' in obj)
  with pytest.raises(errors.CursorFindError, match='No object found'):
    c.find(lambda path, obj: False)
  nt = collections.namedtuple('NT', 'a b')
  with pytest.raises(errors.CursorFindError, match=r'\[0\]\.a and \[0\]\.b'):
    cursor([nt({'k': 1}, {'k': 2})]).find(
      lambda path, obj: isinstance(obj, dict)
    )
  with pytest.raises(NotImplementedError, match='only implemented for tuples'):
    list(cursor({'a': 1}))
  with pytest.raises(TypeError, match='Cannot index into 3'):
    cursor(3)[0]


def test_traverse_tree_paths_and_access_types():
  from flax.cursor import AccessType, _traverse_tree

  @dataclasses.dataclass
  class D:
    x: int
    y: dict

  tree = {'a': {'b': {'c': 1}}, 'l': [1, (2, 3)], 'd': D(6, {'z': 7})}
  assert [a.value for a in AccessType] == [1, 2]
  assert list(
    _traverse_tree((), tree, cond_fn=lambda p, v: isinstance(v, dict))
  ) == [
    (('a', AccessType.ITEM),),
    (('d', AccessType.ITEM), ('y', AccessType.ATTR)),
  ]
  updates = list(
    _traverse_tree(
      (), tree, update_fn=lambda p, v: v * 10 if isinstance(v, int) else v
    )
  )
  assert [('/'.join(str(k) for k, _ in p), v) for p, v in updates] == [
    ('a/b/c', 10),
    ('l/0', 10),
    ('l/1/0', 20),
    ('l/1/1', 30),
    ('d/x', 60),
    ('d/y/z', 70),
  ]
  with pytest.raises(errors.TraverseTreeError, match='are None'):
    list(_traverse_tree((), tree))
  with pytest.raises(errors.TraverseTreeError, match='are not None'):
    list(_traverse_tree((), tree, update_fn=id, cond_fn=id))


def test_cursor_path_and_root():
  c = cursor({'a': {'b': {'c': 1}}, 'd': [{'e': 2}]})
  assert [x._path for x in c.find_all(lambda p, v: isinstance(v, dict))] == [
    "['a']",
    "['d'][0]",
  ]
  assert [
    x._path for x in c['a'].find_all(lambda p, v: isinstance(v, dict))
  ] == ["['a']['b']"]
  assert c['d'][0]['e']._path == "['d'][0]['e']" and c._path == ''
  assert c['d'][0]._root is c
  with pytest.raises(AttributeError, match='Attribute path_str not found'):
    c.path_str


def test_named_tuple_items_are_its_fields():
  Pair = collections.namedtuple('Pair', 'x y')
  t = Pair(Pair(0, 1), Pair(2, 3))
  c = cursor(t)
  # c[0] and c.x are one child cursor, recorded under the field name.
  assert c[0] is c.x and c[-1] is c.y
  c.x.x = 4
  c[0].y = 5
  c.y.x = 6
  c.y[1] = 7
  assert list(c._changes) == ['x', 'y']
  assert c.build() == Pair(Pair(4, 5), Pair(6, 7))
  c[0][1] = -5
  assert c.build() == Pair(Pair(4, -5), Pair(6, 7))
  c.x = 'b'
  c[0] = 'a'
  assert c.build() == Pair('a', Pair(6, 7))
  assert [child._parent_key.key for child in cursor(t)] == ['x', 'y']
  with pytest.raises(TypeError, match='slice'):
    cursor(t)[0:1]


def test_numeric_dunders_follow_the_value():
  c = cursor(7)
  assert divmod(c, 2) == (3, 1) and divmod(23, c) == (3, 2)
  assert round(cursor(7.567), 1) == 7.6 and round(cursor(7.5)) == 8
  with pytest.raises(TypeError, match=r'Cursor.__pow__\(\)'):
    pow(c, 2, 5)
  a = jnp.array([1, 2])
  np.testing.assert_array_equal(cursor(a) != jnp.array([1, 3]), [False, True])
  np.testing.assert_array_equal(a != cursor(jnp.array([1, 3])), [False, True])
  assert (cursor(1) != cursor(2)) is True and (cursor(1) != 1) is False


def test_repr_indents_multiline_values():
  c = cursor({'k': 1})
  c['k'] = FrozenDict({'a': 1})
  assert repr(c) == (
    'Cursor(\n'
    "  _obj={'k': 1},\n"
    '  _changes={\n'
    "    'k': Cursor(\n"
    '           _obj=FrozenDict({\n'
    '               a: 1,\n'
    '           }),\n'
    '           _changes={}\n'
    '         )\n'
    '  }\n'
    ')'
  )
