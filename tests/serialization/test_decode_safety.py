"""Hostile, corrupted and truncated bytes give clear errors."""

import pickle

import msgpack
import numpy as np
import pytest

from flax import serialization
from flax.serialization import MsgpackDecodeError

GOOD = serialization.to_bytes(
  {'a': np.arange(6, dtype=np.float32).reshape(2, 3), 'b': [1, 'x'], 'c': 2j}
)


def ext(code, payload):
  return msgpack.packb(msgpack.ExtType(code, payload))


def test_every_truncation_is_an_error():
  for n in range(len(GOOD)):
    with pytest.raises(MsgpackDecodeError):
      serialization.msgpack_restore(GOOD[:n])


def test_trailing_bytes_are_an_error():
  with pytest.raises(MsgpackDecodeError, match='unexpected bytes'):
    serialization.msgpack_restore(GOOD + b'\x00')


def test_random_garbage_never_crashes():
  rng = np.random.default_rng(0)
  for _ in range(300):
    data = bytearray(GOOD)
    for i in rng.integers(0, len(data), size=3):
      data[i] = int(rng.integers(0, 256))
    try:
      serialization.msgpack_restore(bytes(data))
    except MsgpackDecodeError:
      pass


def test_pickle_payloads_are_not_executed():
  evil = pickle.dumps(print)
  for code in (1, 3, 9, 127):
    with pytest.raises(MsgpackDecodeError):
      serialization.msgpack_restore(ext(code, evil))
  with pytest.raises(MsgpackDecodeError):
    serialization.msgpack_restore(evil)


def test_object_and_structured_dtypes_are_refused():
  for name in ('object', 'O', 'V8', '[("a", "<i4")]', 'str32', 'U4'):
    payload = msgpack.packb(([1], name, b'\x00' * 8), use_bin_type=True)
    with pytest.raises(MsgpackDecodeError, match='Unsupported array dtype'):
      serialization.msgpack_restore(ext(1, payload))


def test_shape_and_buffer_must_agree():
  payload = msgpack.packb(([1000000000, 1000000000], 'float32', b'\x00' * 8))
  with pytest.raises(MsgpackDecodeError, match='needs'):
    serialization.msgpack_restore(ext(1, payload))
  payload = msgpack.packb(([-1], 'float32', b''), use_bin_type=True)
  with pytest.raises(MsgpackDecodeError):
    serialization.msgpack_restore(ext(1, payload))


def test_malformed_extension_payloads():
  for payload in (
    b'',
    b'\x92\x90\xa4int8',
    msgpack.packb([[1], 'int8']),
    msgpack.packb({'shape': [1]}),
    msgpack.packb(([1], 'int8', b'\x01', 'extra'), use_bin_type=True),
  ):
    with pytest.raises(MsgpackDecodeError):
      serialization.msgpack_restore(ext(1, payload))
  with pytest.raises(MsgpackDecodeError, match='complex'):
    serialization.msgpack_restore(ext(2, msgpack.packb(['a', 'b'])))
  with pytest.raises(MsgpackDecodeError, match='has a shape'):
    serialization.msgpack_restore(
      ext(3, msgpack.packb(([2], 'int8', b'\x01\x02'), use_bin_type=True))
    )


def test_malformed_chunked_arrays():
  for bad in (
    {'__msgpack_chunked_array__': True},
    {'__msgpack_chunked_array__': True, 'shape': {'0': 4}, 'chunks': {}},
    {
      '__msgpack_chunked_array__': True,
      'shape': {'0': 5},
      'chunks': {'0': np.arange(4)},
    },
    {
      '__msgpack_chunked_array__': True,
      'shape': {'1': 4},
      'chunks': {'0': np.arange(4)},
    },
  ):
    data = serialization.msgpack_serialize({'w': bad})
    with pytest.raises(MsgpackDecodeError, match='hunked'):
      serialization.msgpack_restore(data)


def test_malformed_prng_key():
  data = serialization.msgpack_serialize(
    {'k': {'__msgpack_prng_key__': True, 'impl': 'nope', 'data': np.zeros(2)}}
  )
  with pytest.raises(MsgpackDecodeError, match='PRNG key'):
    serialization.msgpack_restore(data)


def test_deep_nesting_is_handled():
  deep = b'\x91' * 100000 + b'\x01'
  with pytest.raises(MsgpackDecodeError):
    serialization.msgpack_restore(deep)
  # {'a': {'a': ... 1}} 900 deep, written out: msgpack's own packer refuses
  # that depth before msgpack 1.2.
  data = b'\x81\xa1a' * 900 + b'\x01'
  restored = serialization.msgpack_restore(data)
  for _ in range(900):
    restored = restored['a']
  assert restored == 1


def test_huge_declared_lengths_do_not_allocate():
  # A bin32 header claiming 4 GiB with 3 bytes behind it.
  with pytest.raises(MsgpackDecodeError):
    serialization.msgpack_restore(b'\xc6\xff\xff\xff\xff abc')
  with pytest.raises(MsgpackDecodeError):
    serialization.msgpack_restore(b'\xdd\xff\xff\xff\xff')


def test_non_string_map_keys_are_restored():
  assert serialization.msgpack_restore(msgpack.packb({1: 2})) == {1: 2}
  # Unhashable keys cannot be restored.
  with pytest.raises(MsgpackDecodeError):
    serialization.msgpack_restore(b'\x81\x91\x01\x02')


def test_decode_error_is_a_msgpack_format_and_stack_error():
  import msgpack

  from flax import serialization

  for bad in (b'\xc1\xc1\xc1', b'\x91' * 100000):
    try:
      serialization.msgpack_restore(bad)
    except msgpack.exceptions.FormatError as e:
      assert isinstance(e, ValueError)
      assert isinstance(e, msgpack.exceptions.StackError)
    else:
      raise AssertionError(f'{bad[:4]!r} decoded')


def test_dtype_names_numpy_would_parse_as_expressions():
  # NumPy raises SyntaxError or ValueError for some of these strings.
  for name in (',', '(1,', '(,)i4', '(2,3', '(2,)(', 'i4,i4', '(2,)i4', 'foo'):
    payload = msgpack.packb(([1], name, b'\x00' * 4), use_bin_type=True)
    with pytest.raises(MsgpackDecodeError, match='Unsupported array dtype'):
      serialization.msgpack_restore(ext(1, payload))


def test_deeply_nested_input_is_a_decode_error():
  # Deeper than msgpack's own stack: refused while decoding.
  for prefix in (b'\x91', b'\x81\xa1a', b'\x81\xa10'):
    with pytest.raises(MsgpackDecodeError):
      serialization.from_bytes({'a': 1}, prefix * 5000 + b'\x01')
  # Decodable, but too deep to compare with the target: the same error, not
  # a RecursionError.
  lists = b'\x91' * 1000 + b'\x01'
  for target in ({'a': 1}, {'b': 1}):
    with pytest.raises(MsgpackDecodeError, match='nested too deeply'):
      serialization.from_bytes(target, lists)
  # A shallow mismatch is reported as such.
  dicts = b'\x81\xa1a' * 1000 + b'\x01'
  with pytest.raises(ValueError, match='keys do not match'):
    serialization.from_bytes({'b': 1}, dicts)
