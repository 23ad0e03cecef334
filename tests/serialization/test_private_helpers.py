"""Flax's private helpers of flax.serialization, with Flax 0.12.8's results."""

import collections
import doctest

import jax.numpy as jnp
import msgpack
import numpy as np
import pytest

from flax import serialization as s
from flax.core import FrozenDict
from flax.serialization import _helpers

A = np.arange(6, dtype=np.float32).reshape(2, 3)
A_BYTES = (
  b'\x93\x92\x02\x03\xa7float32\xc4\x18\x00\x00\x00\x00\x00\x00\x80?\x00'
  b'\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0@'
)
NT = collections.namedtuple('NT', 'a b')


def test_doctests():
  assert doctest.testmod(_helpers).failed == 0


def test_ndarray_bytes():
  assert s._ndarray_to_bytes(A) == A_BYTES
  assert s._ndarray_to_bytes(np.asfortranarray(A)) == A_BYTES
  assert s._ndarray_to_bytes(jnp.ones(2)) == (
    b'\x93\x91\x02\xa7float32\xc4\x08\x00\x00\x80?\x00\x00\x80?'
  )
  assert s._ndarray_to_bytes(np.float32(2)) == (
    b'\x93\x90\xa7float32\xc4\x04\x00\x00\x00@'
  )
  assert s._ndarray_to_bytes(jnp.ones(2, jnp.bfloat16)) == (
    b'\x93\x91\x02\xa8bfloat16\xc4\x04\x80?\x80?'
  )
  with pytest.raises(ValueError, match='Object and structured dtypes'):
    s._ndarray_to_bytes(np.array(['a'], dtype=object))
  with pytest.raises(AttributeError):
    s._ndarray_to_bytes([1, 2])
  out = s._ndarray_from_bytes(A_BYTES)
  np.testing.assert_array_equal(out, A)
  assert out.dtype == np.float32 and not out.flags.writeable


def test_msgpack_ext_pack_and_unpack():
  ext = s._msgpack_ext_pack(A)
  assert ext.code == s._MsgpackExtType.ndarray == 1 and ext.data == A_BYTES
  ext = s._msgpack_ext_pack(1 + 2j)
  assert ext.code == s._MsgpackExtType.native_complex == 2
  assert ext.data == (
    b'\x92\xcb?\xf0\x00\x00\x00\x00\x00\x00\xcb@\x00\x00\x00\x00\x00\x00\x00'
  )
  assert s._msgpack_ext_unpack(ext.code, ext.data) == 1 + 2j
  ext = s._msgpack_ext_pack(np.int64(2))
  assert ext.code == s._MsgpackExtType.npscalar == 3
  assert (
    ext.data == b'\x93\x90\xa5int64\xc4\x08\x02\x00\x00\x00\x00\x00\x00\x00'
  )
  scalar = s._msgpack_ext_unpack(ext.code, ext.data)
  assert scalar == 2 and type(scalar) is np.int64
  assert s._msgpack_ext_pack(3) == 3 and s._msgpack_ext_pack((1, 2)) == (1, 2)
  assert s._msgpack_ext_unpack(9, b'abc') == msgpack.ExtType(9, b'abc')
  tree = {'a': A, 'c': 1j}
  packed = msgpack.packb(tree, default=s._msgpack_ext_pack, strict_types=True)
  assert packed == s.msgpack_serialize(tree)
  restored = msgpack.unpackb(packed, ext_hook=s._msgpack_ext_unpack, raw=False)
  np.testing.assert_array_equal(restored['a'], A)
  assert restored['c'] == 1j


def test_chunk_and_unchunk_in_place(monkeypatch):
  monkeypatch.setattr(s, 'MAX_CHUNK_SIZE', 8)
  d = {
    'a': np.arange(5, dtype=np.float32),
    'b': {
      'c': np.arange(2, dtype=np.float32),
      'l': [np.arange(4, dtype=np.float32)],
    },
    'n': 3,
    'j': jnp.arange(3.0),
  }
  assert s._chunk_array_leaves_in_place(d) is d
  assert d['a']['__msgpack_chunked_array__'] is True
  assert d['a']['shape'] == {'0': 5}
  assert [c.tolist() for c in d['a']['chunks'].values()] == [
    [0.0, 1.0],
    [2.0, 3.0],
    [4.0],
  ]
  # Only NumPy arrays among dict values are chunked.
  assert isinstance(d['b']['c'], np.ndarray)
  assert isinstance(d['b']['l'][0], np.ndarray)
  assert not isinstance(d['j'], (dict, np.ndarray))
  assert s._unchunk_array_leaves_in_place(d) is d
  np.testing.assert_array_equal(d['a'], np.arange(5, dtype=np.float32))
  marker = {
    '__msgpack_chunked_array__': True,
    'shape': {'0': 2},
    'chunks': {'0': np.arange(2.0)},
  }
  np.testing.assert_array_equal(
    s._unchunk_array_leaves_in_place(marker), np.arange(2.0)
  )
  leaf = np.arange(3.0)
  assert s._chunk_array_leaves_in_place(leaf) is leaf


def test_state_dict_registry_and_handlers():
  assert s._STATE_DICT_REGISTRY[dict] == (s._dict_state_dict, s._restore_dict)
  assert s._STATE_DICT_REGISTRY[list] == (s._list_state_dict, s._restore_list)
  assert s._dict_state_dict({'a': 1, 2: [3, (4,)], 'b': NT(1, 2)}) == {
    'a': 1,
    '2': {'0': 3, '1': {'0': 4}},
    'b': {'a': 1, 'b': 2},
  }
  assert list(s._dict_state_dict({'b': 1, 'a': 2})) == ['b', 'a']
  assert s._dict_state_dict(FrozenDict({'a': 1})) == {'a': 1}
  assert s._restore_dict({'a': 1, 'b': [1]}, {'a': 5, 'b': {'0': 7}}) == {
    'a': 5,
    'b': [7],
  }
  assert s._restore_dict({1: 1}, {'1': 5}) == {1: 5}
  assert s._restore_dict({'a': 1}, {'a': 5, 'c': 3}) == {'a': 5}
  with pytest.raises(ValueError, match="target dict contains keys {'b'}"):
    s._restore_dict({'a': 1, 'b': 2}, {'a': 5})
  assert s._list_state_dict([1, [2, 3], {'a': 4}]) == {
    '0': 1,
    '1': {'0': 2, '1': 3},
    '2': {'a': 4},
  }
  assert s._namedtuple_state_dict(NT(1, {'c': 2})) == {'a': 1, 'b': {'c': 2}}
  with pytest.raises(AttributeError, match='_fields'):
    s._namedtuple_state_dict((1, 2))
  assert [s._is_namedtuple(x) for x in [NT(1, 2), (1, 2), [1], NT, 1]] == [
    True,
    False,
    False,
    False,
    False,
  ]
  assert s._restore_namedtuple(NT(1, 2), {'a': 5, 'b': 6}) == NT(5, 6)
  with pytest.raises(ValueError, match='size of the list and the state dict'):
    s._restore_list([1, 2], {'0': 5})
