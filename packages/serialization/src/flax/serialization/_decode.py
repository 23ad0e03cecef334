"""Flax's msgpack wire format: decoding, with checks on untrusted input.

Decoding never runs code from the input: only msgpack values and the three
Flax extension types are understood, dtypes come from a fixed list of
numeric types, and every length is checked against the bytes present.
Malformed, truncated or hostile input raises ``MsgpackDecodeError``.
"""

import functools
import math
import re

import msgpack
import numpy as np

from flax.serialization import _encode

_NUMERIC_KINDS = _encode.NUMERIC_KINDS
_EXTRA_DTYPES = _encode.EXTRA_DTYPES


class MsgpackDecodeError(
  msgpack.exceptions.FormatError, msgpack.exceptions.StackError
):
  """Bytes that are not a valid Flax msgpack encoding.

  Raised for truncated, corrupted or hostile input; the message says what is
  wrong. It is a ``ValueError`` and one of msgpack's own decode errors
  (``FormatError``, ``StackError``), so handlers written for either catch it.
  """


# Dtype names as ``ndarray.dtype.name`` writes them ('float32', 'bool', ...).
# Anything else is refused before NumPy parses it: NumPy reads some strings
# as type expressions and raises SyntaxError or ValueError for them.
_DTYPE_NAME_RE = re.compile(r'[a-z][a-z0-9_]{0,31}')


@functools.lru_cache(maxsize=None)
def dtype_from_name(name: str) -> np.dtype:
  """Returns the dtype stored under ``name`` (numeric dtypes only)."""
  if name in _EXTRA_DTYPES:
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))
  dtype = None
  if _DTYPE_NAME_RE.fullmatch(name):
    try:
      dtype = np.dtype(name)
    except Exception:  # noqa: BLE001 - any refusal by NumPy means 'no'.
      dtype = None
  if dtype is None or dtype.kind not in _NUMERIC_KINDS or dtype.name != name:
    raise MsgpackDecodeError(f'Unsupported array dtype {name!r} in msgpack.')
  return dtype


class _Reader:
  """Reads the small msgpack header of an ndarray payload."""

  def __init__(self, data):
    self.data = data
    self.pos = 0

  def need(self, n):
    if self.pos + n > len(self.data):
      raise MsgpackDecodeError('Truncated ndarray in msgpack extension.')

  def byte(self):
    self.need(1)
    b = self.data[self.pos]
    self.pos += 1
    return b

  def uint(self, n):
    self.need(n)
    v = int.from_bytes(self.data[self.pos : self.pos + n], 'big')
    self.pos += n
    return v

  def sint(self, n):
    self.need(n)
    v = int.from_bytes(self.data[self.pos : self.pos + n], 'big', signed=True)
    self.pos += n
    return v

  def array_len(self):
    b = self.byte()
    if 0x90 <= b <= 0x9F:
      return b & 0x0F
    if b == 0xDC:
      return self.uint(2)
    if b == 0xDD:
      return self.uint(4)
    raise MsgpackDecodeError('Malformed ndarray header in msgpack extension.')

  def int(self):
    b = self.byte()
    if b <= 0x7F:
      return b
    if 0xCC <= b <= 0xCF:
      return self.uint(1 << (b - 0xCC))
    if 0xD0 <= b <= 0xD3:
      return self.sint(1 << (b - 0xD0))
    raise MsgpackDecodeError('Malformed array shape in msgpack extension.')

  def raw_len(self):
    b = self.byte()
    if 0xA0 <= b <= 0xBF:
      return b & 0x1F
    if b in (0xC4, 0xD9):
      return self.uint(1)
    if b in (0xC5, 0xDA):
      return self.uint(2)
    if b in (0xC6, 0xDB):
      return self.uint(4)
    raise MsgpackDecodeError('Malformed ndarray header in msgpack extension.')

  def str(self):
    n = self.raw_len()
    self.need(n)
    raw = bytes(self.data[self.pos : self.pos + n])
    self.pos += n
    try:
      return raw.decode('utf-8')
    except UnicodeDecodeError:
      raise MsgpackDecodeError('Malformed dtype name in msgpack.') from None


def ndarray_from_payload(data) -> np.ndarray:
  """Decodes the payload of an ndarray extension without copying it."""
  r = _Reader(data)
  if r.array_len() != 3:
    raise MsgpackDecodeError('Malformed ndarray header in msgpack extension.')
  ndim = r.array_len()
  if ndim > 64:
    raise MsgpackDecodeError(f'Array of rank {ndim} in msgpack (max 64).')
  shape = tuple(r.int() for _ in range(ndim))
  if any(d < 0 for d in shape):
    raise MsgpackDecodeError(f'Negative array shape {shape} in msgpack.')
  dtype = dtype_from_name(r.str())
  nbytes = r.raw_len()
  if r.pos + nbytes != len(data):
    raise MsgpackDecodeError('Truncated or padded ndarray in msgpack.')
  count = math.prod(shape)
  if count * dtype.itemsize != nbytes:
    raise MsgpackDecodeError(
      f'Array of shape {shape} and dtype {dtype.name} needs '
      f'{count * dtype.itemsize} bytes, but the msgpack holds {nbytes}.'
    )
  return np.frombuffer(data, dtype=dtype, count=count, offset=r.pos).reshape(
    shape
  )


def _ext_hook(code, data):
  if code == _encode.EXT_NDARRAY:
    return ndarray_from_payload(data)
  if code == _encode.EXT_NPSCALAR:
    arr = ndarray_from_payload(data)
    if arr.ndim:
      raise MsgpackDecodeError('A numpy scalar in msgpack has a shape.')
    return arr[()]
  if code == _encode.EXT_COMPLEX:
    parts = msgpack.unpackb(data, raw=False)
    if (
      type(parts) is not list
      or len(parts) != 2
      or not all(type(p) in (int, float) for p in parts)
    ):
      raise MsgpackDecodeError('Malformed complex number in msgpack.')
    return complex(parts[0], parts[1])
  raise MsgpackDecodeError(f'Unknown msgpack extension type code {code}.')


def _unchunk(d: dict) -> np.ndarray:
  shape, chunks = d.get('shape'), d.get('chunks')
  if type(shape) is not dict or type(chunks) is not dict:
    raise MsgpackDecodeError('Malformed chunked array in msgpack.')
  try:
    shape = tuple(shape[str(i)] for i in range(len(shape)))
    parts = [chunks[str(i)] for i in range(len(chunks))]
  except KeyError:
    raise MsgpackDecodeError('Malformed chunked array in msgpack.') from None
  if not all(type(s) is int and s >= 0 for s in shape) or not all(
    isinstance(p, np.ndarray) and p.ndim == 1 for p in parts
  ):
    raise MsgpackDecodeError('Malformed chunked array in msgpack.')
  if not parts or len({p.dtype for p in parts}) != 1:
    raise MsgpackDecodeError('Malformed chunked array in msgpack.')
  flat = np.concatenate(parts)
  if flat.size != math.prod(shape):
    raise MsgpackDecodeError(
      f'Chunked array of shape {shape} holds {flat.size} elements.'
    )
  return flat.reshape(shape)


def _unkey(d: dict):
  impl, data = d.get('impl'), d.get('data')
  if type(impl) is not str or not isinstance(data, np.ndarray):
    raise MsgpackDecodeError('Malformed PRNG key in msgpack.')
  import jax

  try:
    return jax.random.wrap_key_data(data, impl=impl)
  except (TypeError, ValueError) as e:
    raise MsgpackDecodeError(f'Malformed PRNG key in msgpack: {e}') from None


def _convert_marker(d: dict):
  if d.get(_encode.CHUNKED_MARKER) is True:
    return _unchunk(d)
  if d.get(_encode.KEY_MARKER) is True:
    return _unkey(d)
  return None


def _restore_markers(tree):
  """Turns chunked-array and key maps back into arrays (no recursion)."""
  if type(tree) is dict:
    converted = _convert_marker(tree)
    if converted is not None:
      return converted
  elif type(tree) is not list:
    return tree
  stack = [tree]
  while stack:
    node = stack.pop()
    items = node.items() if type(node) is dict else enumerate(node)
    for k, v in list(items):
      if type(v) is dict:
        converted = _convert_marker(v)
        if converted is not None:
          node[k] = converted
        else:
          stack.append(v)
      elif type(v) is list:
        stack.append(v)
  return tree


def msgpack_restore(encoded_pytree) -> object:
  """Restores a state dict from msgpack bytes written by ``msgpack_serialize``.

  Arrays come back as (read-only) NumPy arrays; chunked arrays are joined.

  >>> import numpy as np
  >>> from flax import serialization
  >>> data = serialization.msgpack_serialize({'a': np.arange(3)})
  >>> serialization.msgpack_restore(data)
  {'a': array([0, 1, 2])}

  Args:
    encoded_pytree: the bytes (or any bytes-like object).

  Returns:
    The state dict.

  Raises:
    MsgpackDecodeError: when the bytes are truncated, corrupted or not a
      Flax msgpack encoding.
  """
  if not isinstance(encoded_pytree, (bytes, bytearray, memoryview)):
    raise TypeError(
      f'msgpack_restore expects bytes, got {type(encoded_pytree).__name__}.'
    )
  try:
    tree = msgpack.unpackb(
      encoded_pytree, ext_hook=_ext_hook, raw=False, strict_map_key=False
    )
  except MsgpackDecodeError:
    raise
  except msgpack.ExtraData:
    raise MsgpackDecodeError(
      'Invalid msgpack: unexpected bytes after the end of the data.'
    ) from None
  except (ValueError, TypeError, msgpack.UnpackException) as e:
    raise MsgpackDecodeError(
      f'Invalid or truncated msgpack data ({type(e).__name__}: {e}).'
    ) from None
  return _restore_markers(tree)
