"""Flax's private serialization helpers, for code written against them.

Code outside Flax uses a few private names of ``flax.serialization``: the
msgpack ``default``/``ext_hook`` pair (``msgpack.packb(x,
default=_msgpack_ext_pack, strict_types=True)``), the ndarray payload
codec, the in-place (un)chunking of large arrays, and the state-dict
registry with its built-in handlers. They behave as Flax's do; the wire
format is the one of :mod:`flax.serialization._encode`.

>>> import msgpack, numpy as np
>>> from flax import serialization
>>> data = msgpack.packb(
...     {'a': np.ones(2, np.float32)},
...     default=serialization._msgpack_ext_pack, strict_types=True)
>>> data == serialization.msgpack_serialize({'a': np.ones(2, np.float32)})
True
>>> msgpack.unpackb(data, ext_hook=serialization._msgpack_ext_unpack)
{'a': array([1., 1.], dtype=float32)}
"""

import enum
import sys

import msgpack
import numpy as np

from flax.serialization import _decode
from flax.serialization import _encode


class _MsgpackExtType(enum.IntEnum):
  """Codes of the msgpack extension types of the wire format."""

  ndarray = _encode.EXT_NDARRAY
  native_complex = _encode.EXT_COMPLEX
  npscalar = _encode.EXT_NPSCALAR


def _is_jax_array(x) -> bool:
  jax = sys.modules.get('jax')
  return jax is not None and isinstance(x, jax.Array)


def _ndarray_to_bytes(arr) -> bytes:
  """The msgpack of ``(shape, dtype name, C-order bytes)`` of an array.

  Raises:
    ValueError: for object or structured dtypes.
  """
  if _is_jax_array(arr):
    arr = np.asarray(arr)
  if arr.dtype.hasobject or arr.dtype.fields is not None:
    raise ValueError(
      'Object and structured dtypes not supported for serialization of '
      'ndarrays.'
    )
  payload = (list(arr.shape), arr.dtype.name, arr.tobytes('C'))
  return msgpack.packb(payload, use_bin_type=True)


def _ndarray_from_bytes(data: bytes) -> np.ndarray:
  """Decodes :func:`_ndarray_to_bytes` (a read-only view of ``data``)."""
  return _decode.ndarray_from_payload(data)


def _msgpack_ext_pack(x):
  """``default`` for ``msgpack.packb``: arrays, complex and numpy scalars
  become extension types; anything else is returned as it is."""
  if isinstance(x, np.ndarray) or _is_jax_array(x):
    return msgpack.ExtType(_MsgpackExtType.ndarray, _ndarray_to_bytes(x))
  if isinstance(x, np.generic):
    data = _ndarray_to_bytes(np.asarray(x))
    return msgpack.ExtType(_MsgpackExtType.npscalar, data)
  if isinstance(x, complex):
    data = msgpack.packb((x.real, x.imag))
    return msgpack.ExtType(_MsgpackExtType.native_complex, data)
  return x


def _msgpack_ext_unpack(code, data):
  """``ext_hook`` for ``msgpack.unpackb``; unknown codes stay ``ExtType``."""
  if code == _MsgpackExtType.ndarray:
    return _ndarray_from_bytes(data)
  if code == _MsgpackExtType.native_complex:
    real, imag = msgpack.unpackb(data)
    return complex(real, imag)
  if code == _MsgpackExtType.npscalar:
    return _ndarray_from_bytes(data)[()]
  return msgpack.ExtType(code, data)


def _chunk_array_leaves_in_place(d):
  """Replaces the NumPy arrays over ``MAX_CHUNK_SIZE`` bytes among the
  values of nested dicts by chunked-array maps; returns ``d``."""
  if isinstance(d, dict):
    limit = _encode._max_chunk_size()
    for key, value in d.items():
      if isinstance(value, np.ndarray):
        if value.size * value.dtype.itemsize > limit:
          d[key] = _encode._chunked(value)
      else:
        _chunk_array_leaves_in_place(value)
  return d


def _unchunk_array_leaves_in_place(d):
  """Undoes :func:`_chunk_array_leaves_in_place` (a chunked-array map
  itself gives its array); returns ``d``."""
  if isinstance(d, dict):
    if _encode.CHUNKED_MARKER in d:
      return _decode._unchunk(d)
    for key, value in d.items():
      if isinstance(value, dict) and _encode.CHUNKED_MARKER in value:
        d[key] = _decode._unchunk(value)
      else:
        _unchunk_array_leaves_in_place(value)
  return d
