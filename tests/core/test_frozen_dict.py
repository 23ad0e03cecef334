"""Tests of flax.core.frozen_dict."""

import doctest
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import core
from flax.core import frozen_dict
from flax.core.frozen_dict import FrozenDict


def test_doctests():
  assert doctest.testmod(frozen_dict).failed == 0


def test_public_names_in_flax_core():
  assert core.FrozenDict is FrozenDict
  for name in ('freeze', 'unfreeze', 'copy', 'pop', 'pretty_repr'):
    assert getattr(core, name) is getattr(frozen_dict, name)


def test_is_an_immutable_mapping():
  fd = FrozenDict({'a': 1, 'b': {'c': 2}})
  assert len(fd) == 2
  assert list(fd) == ['a', 'b']
  assert 'a' in fd and 'z' not in fd
  assert fd.get('z', 3) == 3
  with pytest.raises(ValueError, match='^FrozenDict is immutable.$'):
    fd['a'] = 5
  with pytest.raises(ValueError, match='immutable'):
    del fd['a']
  with pytest.raises(AttributeError):
    fd.x = 1


def test_nested_dicts_come_back_frozen_and_are_copied():
  inner = {'c': [1]}
  source = {'b': inner}
  fd = FrozenDict(source)
  assert isinstance(fd['b'], FrozenDict)
  inner['c'] = 'changed'
  source['b'] = 'changed'
  assert fd['b']['c'] == [1]


def test_kwargs_constructor_and_keyword_unpacking():
  fd = FrozenDict(a=1, b=2)
  assert dict(fd) == {'a': 1, 'b': 2}
  assert {'x': 0, **fd} == {'x': 0, 'a': 1, 'b': 2}


def test_equality_and_hash():
  a = FrozenDict({'x': 1, 'y': {'z': 2}})
  b = FrozenDict({'y': {'z': 2}, 'x': 1})
  assert a == b
  assert a == {'x': 1, 'y': {'z': 2}}
  assert a != FrozenDict({'x': 1})
  assert hash(a) == hash(b)
  assert len({a, b}) == 1


def test_keys_values_items_reprs():
  fd = FrozenDict({'a': 1, 'b': 2})
  assert repr(fd.keys()) == "frozen_dict_keys(['a', 'b'])"
  assert repr(fd.values()) == 'frozen_dict_values([1, 2])'
  assert list(fd.items()) == [('a', 1), ('b', 2)]


def test_repr_matches_flax_docs():
  variables = FrozenDict({'params': {'bias': (5,), 'kernel': (10, 5)}})
  assert repr(variables) == (
    'FrozenDict({\n'
    '    params: {\n'
    '        bias: (5,),\n'
    '        kernel: (10, 5),\n'
    '    },\n'
    '})'
  )
  assert repr(FrozenDict()) == 'FrozenDict({})'
  assert repr(FrozenDict({'a': {}})) == 'FrozenDict({\n    a: {},\n})'


def test_repr_indents_multiline_leaves():
  fd = FrozenDict({'params': {'kernel': jnp.zeros((2, 2))}})
  lines = repr(fd).split('\n')
  assert lines[2] == '        kernel: Array([[0., 0.],'
  assert lines[3] == '               [0., 0.]], dtype=float32),'


def test_pretty_repr_num_spaces():
  fd = FrozenDict({'a': {'b': 1}})
  assert fd.pretty_repr(num_spaces=2) == (
    'FrozenDict({\n  a: {\n    b: 1,\n  },\n})'
  )


def test_copy_adds_and_replaces():
  fd = FrozenDict({'a': 1, 'b': {'c': 2}})
  new = fd.copy({'a': 3, 'd': {'e': 4}})
  assert isinstance(new, FrozenDict)
  assert new == {'a': 3, 'b': {'c': 2}, 'd': {'e': 4}}
  assert fd == {'a': 1, 'b': {'c': 2}}
  assert fd.copy() == fd


def test_pop_returns_rest_and_value():
  variables = FrozenDict({'params': {'w': 1}, 'batch_stats': {'m': 0}})
  state, params = variables.pop('params')
  assert isinstance(state, FrozenDict)
  assert state == {'batch_stats': {'m': 0}}
  assert isinstance(params, FrozenDict) and params == {'w': 1}
  assert 'params' in variables
  with pytest.raises(KeyError):
    variables.pop('nope')


def test_unfreeze_method_gives_plain_nested_dicts():
  fd = FrozenDict({'a': {'b': {'c': 1}}})
  plain = fd.unfreeze()
  assert type(plain) is dict and type(plain['a']['b']) is dict
  plain['a']['b']['c'] = 2
  assert fd['a']['b']['c'] == 1


def test_no_or_operator():
  # As in Flax 0.12.8, a FrozenDict is a Mapping without dict's ``|``;
  # ``copy`` merges.
  with pytest.raises(TypeError, match='unsupported operand'):
    FrozenDict({'a': 1}) | {'b': 2}
  with pytest.raises(TypeError, match='unsupported operand'):
    {'a': 0} | FrozenDict({'a': 1})
  merged = FrozenDict({'a': 1}).copy({'b': 2})
  assert isinstance(merged, FrozenDict) and merged == {'a': 1, 'b': 2}


def test_pickle_roundtrip():
  fd = FrozenDict({'a': {'b': np.arange(3)}})
  restored = pickle.loads(pickle.dumps(fd))
  assert isinstance(restored, FrozenDict)
  np.testing.assert_array_equal(restored['a']['b'], np.arange(3))


def test_pytree_flattens_in_sorted_key_order():
  fd = FrozenDict({'kernel': 1, 'bias': 2, 'a': {'z': 3, 'y': 4}})
  leaves, treedef = jax.tree_util.tree_flatten(fd)
  assert leaves == [4, 3, 2, 1]
  rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
  assert isinstance(rebuilt, FrozenDict) and rebuilt == fd
  shapes = jax.tree_util.tree_map(lambda x: x * 10, fd)
  assert isinstance(shapes, FrozenDict)
  assert list(shapes) == ['a', 'bias', 'kernel']
  assert shapes['a'] == {'y': 40, 'z': 30}


def test_pytree_key_paths():
  fd = FrozenDict({'params': {'kernel': 1, 'bias': 2}})
  paths = [
    jax.tree_util.keystr(path)
    for path, _ in jax.tree_util.tree_flatten_with_path(fd)[0]
  ]
  assert paths == ["['params']['bias']", "['params']['kernel']"]


def test_works_under_jit_and_grad():
  params = FrozenDict({'w': jnp.array(2.0), 'b': jnp.array(1.0)})

  @jax.jit
  def loss(p):
    return p['w'] * 3.0 + p['b']

  grads = jax.grad(loss)(params)
  assert isinstance(grads, FrozenDict)
  np.testing.assert_allclose(grads['w'], 3.0)
  np.testing.assert_allclose(grads['b'], 1.0)


def test_freeze_unfreeze_functions():
  xs = {'a': {'b': 1}, 'c': [1, 2]}
  fd = core.freeze(xs)
  assert isinstance(fd, FrozenDict) and fd == xs
  back = core.unfreeze(fd)
  assert back == xs and type(back['a']) is dict
  # Plain dicts are copied recursively; other values are returned as is.
  nested = {'a': {'b': 1}}
  copied = core.unfreeze(nested)
  assert copied == nested and copied['a'] is not nested['a']
  assert core.unfreeze(5) == 5
  mixed = {'a': FrozenDict({'b': 1})}
  assert type(core.unfreeze(mixed)['a']) is dict


def test_copy_function_on_dict_and_frozendict():
  d = {'a': {'b': 1}}
  new = core.copy(d, {'c': 2})
  assert new == {'a': {'b': 1}, 'c': 2} and type(new) is dict
  assert d == {'a': {'b': 1}}
  assert isinstance(core.copy(FrozenDict(d), {'c': 2}), FrozenDict)
  with pytest.raises(TypeError, match='Expected FrozenDict or dict'):
    core.copy([1], {})


def test_pop_function_on_dict_and_frozendict():
  d = {'params': 1, 'state': {'x': 2}}
  rest, value = core.pop(d, 'params')
  assert rest == {'state': {'x': 2}} and value == 1 and type(rest) is dict
  assert d == {'params': 1, 'state': {'x': 2}}
  rest, value = core.pop(FrozenDict(d), 'state')
  assert isinstance(rest, FrozenDict) and value == {'x': 2}
  with pytest.raises(TypeError, match='Expected FrozenDict or dict'):
    core.pop((1,), 0)


def test_pretty_repr_function():
  assert core.pretty_repr({'a': {'b': 1}, 'c': {}}) == (
    '{\n    a: {\n        b: 1,\n    },\n    c: {},\n}'
  )
  assert core.pretty_repr(FrozenDict({'a': 1})) == 'FrozenDict({\n    a: 1,\n})'
  assert core.pretty_repr([1, 2]) == '[1, 2]'


def test_key_order_of_copies():
  # A FrozenDict unfreezes, and a plain dict is copied by copy/pop, as a
  # pytree: dicts come back in sorted key order at every level. A plain
  # dict unfreezes in its own order; FrozenDict.copy/pop keep theirs.
  d = {'b': {'z': 1, 'a': 2}, 'a': 3}
  order = lambda t: [
    (k, order(v)) if isinstance(v, (dict, FrozenDict)) else k
    for k, v in t.items()
  ]
  sorted_order = ['a', ('b', ['a', 'z'])]
  kept = [('b', ['z', 'a']), 'a']
  assert order(core.unfreeze(FrozenDict(d))) == sorted_order
  assert order(FrozenDict(d).unfreeze()) == sorted_order
  assert order(core.unfreeze(d)) == kept
  assert order(core.unfreeze({'x': FrozenDict({'z': 1, 'a': 2})})) == [
    ('x', ['a', 'z'])
  ]
  assert order(core.copy(d)) == sorted_order
  assert order(core.copy(d, {'c': 0})) == sorted_order + ['c']
  assert order(core.copy(FrozenDict(d), {'c': 0})) == kept + ['c']
  rest, value = core.pop({'p': {'z': 1, 'a': 2}, 's': {'y': 0, 'x': 1}}, 'p')
  assert order(value) == ['a', 'z'] and order(rest) == [('s', ['x', 'y'])]
  rest, value = core.pop(FrozenDict({'p': {'z': 1, 'a': 2}, 'r': 0}), 'p')
  assert order(value) == ['z', 'a'] and order(rest) == ['r']
  # The input is left alone; leaves are shared, containers are new.
  assert order(d) == kept
  leaf = [1]
  copied = core.copy({'l': leaf})
  assert copied['l'] == leaf and copied['l'] is not leaf
  # Keys JAX cannot sort are its error.
  with pytest.raises(ValueError, match='sorting pytree dictionary keys'):
    core.pop({1: 'a', 'b': 2}, 'b')
