"""Byte-exact tests of Flax's msgpack wire format."""

import msgpack
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from flax import serialization


def reference_packb(tree):
  """Flax's encoding written with plain msgpack.packb, for comparison."""

  def arr_payload(a):
    a = np.asarray(a)
    return msgpack.packb(
      (list(a.shape), a.dtype.name, a.tobytes('C')), use_bin_type=True
    )

  def default(x):
    if isinstance(x, np.generic):
      return msgpack.ExtType(3, arr_payload(x))
    if isinstance(x, (np.ndarray, jax.Array)):
      return msgpack.ExtType(1, arr_payload(x))
    if isinstance(x, complex):
      return msgpack.ExtType(2, msgpack.packb((x.real, x.imag)))
    raise TypeError(type(x))

  return msgpack.packb(tree, default=default, strict_types=True)


def test_known_bytes_of_a_small_tree():
  data = serialization.to_bytes(
    {'a': np.ones(2, np.float32), 'b': 3, 'c': None, 's': 'str'}
  )
  # map of 4; 'a' -> ext8 (0xc7) of 0x15 bytes, type 1: fixarray(3) of
  # [shape [2], 'float32', bin8 of 8 bytes (two little-endian 1.0f)].
  assert data == (
    b'\x84'
    b'\xa1a\xc7\x15\x01\x93\x91\x02\xa7float32\xc4\x08'
    b'\x00\x00\x80?\x00\x00\x80?'
    b'\xa1b\x03'
    b'\xa1c\xc0'
    b'\xa1s\xa3str'
  )


def test_known_bytes_of_scalars_and_complex():
  # numpy scalar: ext type 3 holding a 0-d array; 16 bytes -> fixext16.
  assert serialization.msgpack_serialize(np.float32(1.0)) == (
    b'\xd8\x03\x93\x90\xa7float32\xc4\x04\x00\x00\x80?'
  )
  # Python complex: ext type 2 holding [real, imag] as float64; 19 bytes.
  assert serialization.msgpack_serialize(1 + 2j) == (
    b'\xc7\x13\x02\x92\xcb?\xf0\x00\x00\x00\x00\x00\x00'
    b'\xcb@\x00\x00\x00\x00\x00\x00\x00'
  )
  # int8 scalar: 10-byte payload -> ext8.
  assert serialization.msgpack_serialize(np.int8(7)) == (
    b'\xc7\x0a\x03\x93\x90\xa4int8\xc4\x01\x07'
  )


def test_known_bytes_of_lists_and_bfloat16():
  data = serialization.to_bytes([jnp.array([1.0], jnp.bfloat16), True])
  # bfloat16 1.0 is 0x3f80 (little endian 80 3f); the dtype goes by name.
  # The payload is 16 bytes, so the extension is a fixext16 (0xd8).
  assert data == (
    b'\x82\xa10\xd8\x01\x93\x91\x01\xa8bfloat16\xc4\x02\x80?\xa11\xc3'
  )


def test_matches_plain_msgpack_for_a_large_mixed_tree():
  rng = np.random.default_rng(0)
  tree = {
    f'layer_{i}': {
      'kernel': rng.normal(size=(i + 1, 3)).astype(np.float32),
      'bias': jnp.arange(i, dtype=jnp.int32),
      'scalar': np.float64(i / 3),
      'n': i * 1000,
      'neg': -(2**40),
      'f': 0.25 * i,
      'c': complex(i, -i),
      'b': b'\x00\x01' * i,
      'l': [None, 'x' * (i * 10), {'deep': np.bool_(i % 2)}],
    }
    for i in range(20)
  }
  tree['big'] = rng.integers(0, 255, size=70000, dtype=np.uint8)
  tree['nd'] = rng.normal(size=(2, 3, 4, 5))
  tree['noncontig'] = np.arange(24.0).reshape(4, 6)[:, ::2]
  assert serialization.msgpack_serialize(tree, in_place=True) == (
    reference_packb(tree)
  )


def test_ext_sizes_around_msgpack_boundaries():
  for n in (0, 1, 2, 3, 4, 200, 255, 256, 65535, 65536):
    arr = np.zeros(n, np.uint8)
    assert serialization.msgpack_serialize({'x': arr}) == reference_packb(
      {'x': arr}
    ), n


def test_maps_and_lists_with_many_entries():
  tree = {str(i): [0] * 20 for i in range(70000)}
  assert serialization.msgpack_serialize(tree, in_place=True) == (
    reference_packb(tree)
  )


@pytest.mark.parametrize(
  'dtype',
  [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
    np.complex128,
    jnp.bfloat16,
    jnp.float8_e4m3fn,
    jnp.float8_e5m2,
  ],
)
def test_roundtrip_of_every_dtype(dtype):
  arr = (np.arange(6) % 2 if dtype is np.bool_ else np.arange(6)).astype(dtype)
  arr = arr.reshape(2, 3)
  restored = serialization.msgpack_restore(
    serialization.msgpack_serialize({'a': arr, 's': arr[0, 0]})
  )
  assert restored['a'].dtype == np.dtype(dtype)
  assert restored['a'].shape == (2, 3)
  np.testing.assert_array_equal(
    restored['a'].astype(np.complex128), arr.astype(np.complex128)
  )
  assert isinstance(restored['s'], np.generic)
  assert restored['s'].dtype == np.dtype(dtype)


def test_restored_arrays_are_numpy_and_read_only():
  restored = serialization.msgpack_restore(
    serialization.to_bytes({'w': jnp.ones((2, 2))})
  )
  assert type(restored['w']) is np.ndarray
  assert not restored['w'].flags.writeable


def test_scalars_roundtrip_with_their_types():
  tree = {
    'i': 3,
    'neg': -5,
    'big': 2**63,
    'f': 1.5,
    't': True,
    'n': None,
    's': 'é',
    'b': b'raw',
    'c': 3 - 4j,
  }
  restored = serialization.msgpack_restore(
    serialization.msgpack_serialize(tree)
  )
  assert restored == tree
  assert type(restored['t']) is bool and type(restored['b']) is bytes


def test_empty_and_zero_dim_arrays():
  tree = {'e': np.zeros((0, 3), np.float32), 'z': np.array(5, np.int16)}
  restored = serialization.msgpack_restore(
    serialization.msgpack_serialize(tree)
  )
  assert restored['e'].shape == (0, 3) and restored['e'].dtype == np.float32
  assert restored['z'].shape == () and restored['z'] == 5


def test_chunked_arrays(monkeypatch):
  monkeypatch.setattr(serialization, 'MAX_CHUNK_SIZE', 40)
  arr = np.arange(30, dtype=np.float32).reshape(5, 6)  # 120 bytes
  data = serialization.msgpack_serialize(
    {'w': arr, 'small': np.arange(3)}, in_place=True
  )
  raw = msgpack.unpackb(data, raw=False)
  chunked = raw['w']
  assert chunked['__msgpack_chunked_array__'] is True
  assert chunked['shape'] == {'0': 5, '1': 6}
  # 40-byte chunks hold 10 float32 each.
  assert sorted(chunked['chunks']) == ['0', '1', '2']
  expected = reference_packb(
    {
      'w': {
        '__msgpack_chunked_array__': True,
        'shape': {'0': 5, '1': 6},
        'chunks': {
          str(i): arr.reshape(-1)[10 * i : 10 * i + 10] for i in range(3)
        },
      },
      'small': np.arange(3),
    }
  )
  assert data == expected
  restored = serialization.msgpack_restore(data)
  np.testing.assert_array_equal(restored['w'], arr)
  assert restored['w'].dtype == np.float32


def test_chunked_array_at_top_level_and_in_lists(monkeypatch):
  monkeypatch.setattr(serialization, 'MAX_CHUNK_SIZE', 16)
  arr = np.arange(11, dtype=np.int64)
  np.testing.assert_array_equal(
    serialization.msgpack_restore(serialization.msgpack_serialize(arr)), arr
  )
  restored = serialization.msgpack_restore(
    serialization.msgpack_serialize([arr, {'x': [arr]}])
  )
  np.testing.assert_array_equal(restored[1]['x'][0], arr)


def test_typed_prng_keys_roundtrip():
  key = jax.random.key(42)
  keys = jax.random.split(jax.random.key(1), 3)
  restored = serialization.msgpack_restore(
    serialization.to_bytes({'k': key, 'ks': keys})
  )
  assert jax.dtypes.issubdtype(restored['k'].dtype, jax.dtypes.prng_key)
  np.testing.assert_array_equal(
    jax.random.key_data(restored['ks']), jax.random.key_data(keys)
  )
  np.testing.assert_array_equal(
    jax.random.normal(restored['k'], (3,)), jax.random.normal(key, (3,))
  )


def test_unsupported_leaves_raise_clear_errors():
  with pytest.raises(TypeError, match='Cannot serialize a builtins.set leaf'):
    serialization.msgpack_serialize({'x': {1, 2}})
  with pytest.raises(ValueError, match='dtype object cannot be serialized'):
    serialization.msgpack_serialize({'x': np.array([object()])})
  with pytest.raises(ValueError, match='cannot be serialized'):
    serialization.msgpack_serialize({'x': np.array(['a', 'b'])})
  with pytest.raises(TypeError, match="can not serialize 'tuple' object"):
    serialization.msgpack_serialize({(1, 2): 3})
  with pytest.raises(TypeError, match='expects bytes'):
    serialization.msgpack_restore('text')


def test_in_place_does_not_change_the_input():
  tree = {'w': jnp.ones(3)}
  serialization.msgpack_serialize(tree, in_place=True)
  assert isinstance(tree['w'], jax.Array)


def test_copy_sorts_dict_keys_and_in_place_keeps_their_order():
  tree = {'b': {'z': 1, 'y': [{'q': 1, 'p': 2}]}, 'a': None}
  assert serialization.msgpack_serialize(tree).hex() == (
    '82a161c0a16282a1799182a17002a17101a17a01'
  )
  assert serialization.msgpack_serialize({'b': 1, 'a': 2}, in_place=True) == (
    bytes.fromhex('82a16201a16102')
  )
  assert list(tree) == ['b', 'a']  # the input is left as it was


def test_non_string_keys_are_written_as_msgpack_values():
  data = serialization.msgpack_serialize({1: np.arange(3), 2: {3: 5}})
  assert data == (
    b'\x82\x01\xc7#\x01\x93\x91\x03\xa5int64\xc4\x18'
    + np.arange(3, dtype=np.int64).tobytes()
    + b'\x02\x81\x03\x05'
  )
  restored = serialization.msgpack_restore(data)
  assert list(restored) == [1, 2] and restored[2] == {3: 5}
  np.testing.assert_array_equal(restored[1], [0, 1, 2])
  for tree, wire in (
    ({1: 2}, b'\x81\x01\x02'),
    ({1.5: 2}, b'\x81\xcb?\xf8\x00\x00\x00\x00\x00\x00\x02'),
    ({None: 1}, b'\x81\xc0\x01'),
    ({True: 1}, b'\x81\xc3\x01'),
  ):
    assert serialization.msgpack_serialize(tree) == wire
    assert serialization.msgpack_restore(wire) == tree
  # to_bytes goes through the state dict, whose keys are strings.
  assert serialization.to_bytes({1: 2}) == b'\x81\xa11\x02'
  assert serialization.from_bytes({1: 0}, b'\x81\xa11\x02') == {1: 2}
