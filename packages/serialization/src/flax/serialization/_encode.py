"""Flax's msgpack wire format: encoding.

A state dict is written as ``msgpack.packb(tree, default=..., strict_types=
True)`` would write it, with these extension types:

* code 1, an ndarray: the msgpack of ``(shape, dtype_name, C-order bytes)``;
* code 2, a Python complex: the msgpack of ``(real, imag)``;
* code 3, a NumPy scalar: encoded like a 0-d ndarray.

Arrays larger than ``MAX_CHUNK_SIZE`` bytes are stored as a map
``{'__msgpack_chunked_array__': True, 'shape': {...}, 'chunks': {...}}``.
Typed PRNG key arrays, which Flax cannot store, are written as a map
``{'__msgpack_prng_key__': True, 'impl': name, 'data': key_data}``.

The encoder below emits the same bytes as ``msgpack.packb`` but joins the
pieces once, so a large array is copied a single time.
"""

import struct as _struct
import sys
import threading

import msgpack
import numpy as np

EXT_NDARRAY = 1
EXT_COMPLEX = 2
EXT_NPSCALAR = 3

CHUNKED_MARKER = '__msgpack_chunked_array__'
KEY_MARKER = '__msgpack_prng_key__'

NUMERIC_KINDS = frozenset('biufcmM')
EXTRA_DTYPES = frozenset(
  {
    'bfloat16',
    'float8_e3m4',
    'float8_e4m3',
    'float8_e4m3b11fnuz',
    'float8_e4m3fn',
    'float8_e4m3fnuz',
    'float8_e5m2',
    'float8_e5m2fnuz',
    'float8_e8m0fnu',
    'float4_e2m1fn',
    'float6_e2m3fn',
    'float6_e3m2fn',
    'int2',
    'int4',
    'uint2',
    'uint4',
  }
)


# Leaves that msgpack packs natively (with strict_types=True).
_SCALARS = (str, bytes, int, float, bool, type(None))
_local = threading.local()


def _pack_scalar(x) -> bytes:
  packer = getattr(_local, 'packer', None)
  if packer is None:
    packer = _local.packer = msgpack.Packer(
      strict_types=True, use_bin_type=True
    )
  return packer.pack(x)


def _max_chunk_size() -> int:
  # Read from the public module so that ``flax.serialization.MAX_CHUNK_SIZE``
  # can be changed at run time (tests lower it).
  import flax.serialization as pkg

  return pkg.MAX_CHUNK_SIZE


def _map_header(n: int) -> bytes:
  if n < 16:
    return bytes((0x80 | n,))
  if n < 0x10000:
    return b'\xde' + n.to_bytes(2, 'big')
  return b'\xdf' + n.to_bytes(4, 'big')


def _array_header(n: int) -> bytes:
  if n < 16:
    return bytes((0x90 | n,))
  if n < 0x10000:
    return b'\xdc' + n.to_bytes(2, 'big')
  return b'\xdd' + n.to_bytes(4, 'big')


def _bin_header(n: int) -> bytes:
  if n < 0x100:
    return b'\xc4' + n.to_bytes(1, 'big')
  if n < 0x10000:
    return b'\xc5' + n.to_bytes(2, 'big')
  if n < 0x100000000:
    return b'\xc6' + n.to_bytes(4, 'big')
  raise ValueError(f'Cannot serialize a buffer of {n} bytes (max 4 GiB).')


_FIXEXT = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}


def _ext_header(code: int, n: int) -> bytes:
  if n in _FIXEXT:
    return bytes((_FIXEXT[n], code))
  if n < 0x100:
    return _struct.pack('>BBb', 0xC7, n, code)
  if n < 0x10000:
    return _struct.pack('>BHb', 0xC8, n, code)
  if n < 0x100000000:
    return _struct.pack('>BIb', 0xC9, n, code)
  raise ValueError(f'Cannot serialize an extension of {n} bytes (max 4 GiB).')


def _is_prng_key(x) -> bool:
  dtype = getattr(x, 'dtype', None)
  if dtype is None or isinstance(dtype, np.dtype):
    return False
  import jax

  return jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _is_array(x) -> bool:
  if isinstance(x, np.ndarray):
    return True
  jax = sys.modules.get('jax')
  return jax is not None and isinstance(x, jax.Array)


def _to_numpy(x) -> np.ndarray:
  if isinstance(x, np.ndarray):
    return x
  return np.asarray(x)


def _check_dtype(dtype: np.dtype) -> None:
  if dtype.fields is None and (
    dtype.name in EXTRA_DTYPES or dtype.kind in NUMERIC_KINDS
  ):
    return
  raise ValueError(
    f'Arrays of dtype {dtype} cannot be serialized; only numeric dtypes '
    '(bool, int, uint, float, complex, bfloat16, float8, ...) are supported.'
  )


def _ndarray_pieces(arr: np.ndarray, out: list) -> int:
  """Appends the ndarray payload (not its ext header); returns its size."""
  _check_dtype(arr.dtype)
  if not arr.flags.c_contiguous:
    arr = np.ascontiguousarray(arr)
  nbytes = arr.nbytes
  head = (
    b'\x93'
    + _array_header(arr.ndim)
    + b''.join(_pack_scalar(int(d)) for d in arr.shape)
    + _pack_scalar(arr.dtype.name)
    + _bin_header(nbytes)
  )
  out.append(head)
  if nbytes:
    out.append(memoryview(arr.reshape(-1).view(np.uint8)))
  return len(head) + nbytes


def _ext_pieces(code: int, arr: np.ndarray, out: list) -> None:
  pieces = []
  size = _ndarray_pieces(arr, pieces)
  out.append(_ext_header(code, size))
  out.extend(pieces)


def _chunked(arr: np.ndarray) -> dict:
  chunk = max(1, int(_max_chunk_size() // max(arr.dtype.itemsize, 1)))
  flat = np.ascontiguousarray(arr).reshape(-1)
  chunks = [flat[i : i + chunk] for i in range(0, flat.size, chunk)]
  return {
    CHUNKED_MARKER: True,
    'shape': {str(i): int(d) for i, d in enumerate(arr.shape)},
    'chunks': {str(i): c for i, c in enumerate(chunks)},
  }


def _key_map(key) -> dict:
  import jax

  return {
    KEY_MARKER: True,
    'impl': str(jax.random.key_impl(key)),
    'data': np.asarray(jax.random.key_data(key)),
  }


# Deepest container nesting written (and accepted when decoding).
MAX_DEPTH = 512
# Dict keys written as they are; msgpack restores them with their type.
_KEY_TYPES = (str, int, float, bool, type(None), bytes)


def _encode(obj, out: list, depth: int = 0) -> None:
  if depth > MAX_DEPTH:
    raise ValueError(
      f'Cannot serialize a tree nested more than {MAX_DEPTH} levels.'
    )
  t = type(obj)
  if t in _SCALARS:
    out.append(_pack_scalar(obj))
  elif t is dict:
    out.append(_map_header(len(obj)))
    for k, v in obj.items():
      if type(k) not in _KEY_TYPES:
        raise TypeError(
          f'can not serialize {type(k).__name__!r} object as a msgpack map '
          f'key ({k!r}); keys must be str, int, float, bool, bytes or None.'
        )
      out.append(_pack_scalar(k))
      _encode(v, out, depth + 1)
  elif t is list:
    out.append(_array_header(len(obj)))
    for v in obj:
      _encode(v, out, depth + 1)
  elif t is complex:
    payload = _pack_scalar([obj.real, obj.imag])
    out.append(_ext_header(EXT_COMPLEX, len(payload)))
    out.append(payload)
  elif isinstance(obj, np.generic):
    _ext_pieces(EXT_NPSCALAR, np.asarray(obj), out)
  elif _is_array(obj):
    if _is_prng_key(obj):
      _encode(_key_map(obj), out, depth)
      return
    arr = _to_numpy(obj)
    if arr.nbytes > _max_chunk_size():
      _encode(_chunked(arr), out, depth)
    else:
      _ext_pieces(EXT_NDARRAY, arr, out)
  else:
    raise TypeError(
      f'Cannot serialize a {t.__module__}.{t.__qualname__} leaf to msgpack; '
      'supported leaves are arrays, numpy scalars, str, bytes, int, float, '
      'complex, bool and None. Register a state-dict handler for this type '
      'with flax.serialization.register_serialization_state.'
    )


def encode_pieces(pytree) -> list:
  """Returns the msgpack encoding of ``pytree`` as a list of buffers."""
  out = []
  _encode(pytree, out)
  return out


def msgpack_serialize(pytree, in_place: bool = False) -> bytes:
  """Serializes a state dict to msgpack bytes in Flax's wire format.

  Dicts, lists, strings, bytes, numbers, None, NumPy and JAX arrays are
  supported. Dict keys are normally strings; int, float, bool, bytes and
  None keys are written as msgpack values of that type and restored as such. Arrays larger than ``MAX_CHUNK_SIZE`` bytes are
  split into chunks.

  >>> import numpy as np
  >>> from flax import serialization
  >>> serialization.msgpack_serialize({'a': np.float32(1.0)})[:3]
  b'\\x81\\xa1a'

  Args:
    pytree: a state dict (see ``to_state_dict``).
    in_place: when False (the default) the tree is copied first, and the
      copy's dicts have their keys in sorted order, as a pytree copy does;
      when True the tree is written as it is, keys in insertion order
      (what ``to_bytes`` does). The input is never modified either way.

  Returns:
    The msgpack bytes.
  """
  if not in_place:
    pytree = _sorted_copy(pytree)
  return b''.join(encode_pieces(pytree))


def _sorted_copy(tree):
  """``tree`` with every plain dict's keys sorted (lists keep their order)."""
  if type(tree) is dict:
    items = [(k, _sorted_copy(v)) for k, v in tree.items()]
    try:
      items.sort(key=lambda kv: kv[0])
    except TypeError:  # keys that do not compare keep insertion order
      pass
    return dict(items)
  if type(tree) in (list, tuple):
    return type(tree)(_sorted_copy(v) for v in tree)
  return tree
