"""flax.typing: helpers beyond the type aliases."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import typing


def test_doctests():
  assert doctest.testmod(typing).failed == 0


def test_hashable_mapping():
  h = typing.HashableMapping({'b': 1, 'a': 2})
  assert repr(h) == "{'b': 1, 'a': 2}"
  other = typing.HashableMapping({'a': 2, 'b': 1})
  assert h == other and hash(h) == hash(other)
  assert h != {'a': 2, 'b': 1}
  assert h.update({'c': 3}) == typing.HashableMapping({'b': 1, 'a': 2, 'c': 3})
  assert list(h) == ['b', 'a'] and len(h) == 2 and h['a'] == 2
  d = {'x': 1}
  shared = typing.HashableMapping(d, copy=False)
  d['y'] = 2
  assert dict(shared) == {'x': 1, 'y': 2}


def test_size_bytes():
  s = typing.SizeBytes.from_array(jnp.ones((2, 3)))
  assert repr(s) == '6 (24 B)'
  tree = {'a': jnp.ones(4), 'b': np.ones(2, np.int8), 'c': 3}
  assert repr(typing.SizeBytes.from_any(tree)) == '6 (18 B)'
  assert repr(s + s) == '12 (48 B)'
  assert typing.SizeBytes(2, 8) == typing.SizeBytes(2, 8)
  assert [
    repr(typing.SizeBytes(*a))
    for a in [(1, 1500), (1, 1500000), (1, 0), (1234567, 1)]
  ] == ['1 (1.5 KB)', '1 (1.5 MB)', '1 (0 B)', '1,234,567 (1 B)']
  assert repr(typing.SizeBytes.from_any(None)) == '0 (0 B)'


def test_predicates():
  assert typing.has_shape_dtype(jnp.ones(2))
  assert typing.has_shape_dtype(jax.ShapeDtypeStruct((2,), jnp.float32))
  assert not typing.has_shape_dtype(3)
  assert typing.is_key_like('a') and typing.is_key_like(3)
  assert typing.is_key_like(jax.tree_util.DictKey('a'))


def test_pytree_deque():
  q = typing.PytreeDeque([1, jnp.ones(2)])
  assert str(jax.tree_util.tree_structure(q)) == (
    'PyTreeDef(CustomNode(PytreeDeque[()], [*, *]))'
  )
  doubled = jax.tree_util.tree_map(lambda x: x * 2, q)
  assert isinstance(doubled, typing.PytreeDeque) and doubled[0] == 2


def test_base_config_context():
  stack = []

  class Ctx(typing.BaseConfigContext):
    @classmethod
    def get_default(cls):
      return 7

    @classmethod
    def get_stack(cls):
      return stack

  assert Ctx.current_value() == 7
  with Ctx(3) as entered:
    assert entered is None and Ctx.current_value() == 3 and stack == [3]
    with Ctx(4):
      assert Ctx.current_value() == 4
  assert Ctx.current_value() == 7 and stack == []
  c = Ctx(5)
  assert (c.new_value, c.prev_value, stack) == (5, None, [5])
  with pytest.raises(TypeError, match='abstract'):

    class NoStack(typing.BaseConfigContext):
      pass

    NoStack(1)


def test_in_out():
  assert repr(typing.In(0)) == 'In(axis=0)'
  assert repr(typing.Out(1)) == 'Out(axis=1)'
  assert typing.In(0) == typing.In(0)
  assert hash(typing.In(0)) == hash(typing.In(0))
