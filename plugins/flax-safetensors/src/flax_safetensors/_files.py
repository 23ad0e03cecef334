"""Reading safetensors files: whole tensors, or one device's slice.

Every reader error (a truncated file, a damaged header) becomes
``flax.serialization.CheckpointCorruptedError`` naming the file.
"""

import os

import numpy as np
from flax.serialization.backend_utils import CheckpointCorruptedError

# dtypes the safetensors format stores and reads back into NumPy as they
# are; any other dtype is stored as its bytes (see ``_tree``).
NATIVE_DTYPES = frozenset(
  {
    'bool',
    'int8',
    'uint8',
    'int16',
    'uint16',
    'int32',
    'uint32',
    'int64',
    'uint64',
    'float16',
    'bfloat16',
    'float32',
    'float64',
    'complex64',
  }
)


# The format's dtype codes.
_CODES = {
  'BOOL': 'bool',
  'I8': 'int8',
  'U8': 'uint8',
  'I16': 'int16',
  'U16': 'uint16',
  'I32': 'int32',
  'U32': 'uint32',
  'I64': 'int64',
  'U64': 'uint64',
  'F16': 'float16',
  'BF16': 'bfloat16',
  'F32': 'float32',
  'F64': 'float64',
  'C64': 'complex64',
}


def _dtype_of(code):
  import ml_dtypes

  name = _CODES[code]
  return ml_dtypes.bfloat16 if name == 'bfloat16' else np.dtype(name)


def corrupted(path, error) -> CheckpointCorruptedError:
  return CheckpointCorruptedError(
    f'Checkpoint file {os.fspath(path)!r} is truncated or corrupted and '
    f'cannot be restored: {error}'
  )


def looks_like_safetensors(path) -> bool:
  """Whether ``path`` is a file starting with a safetensors header.

  The format has no magic number: a file qualifies when its first eight
  bytes are a header length that fits in the file and the header starts
  with ``{``.
  """
  try:
    with open(path, 'rb') as f:
      head = f.read(9)
      size = os.fstat(f.fileno()).st_size
  except OSError:
    return False
  if len(head) < 9 or head[8:9] != b'{':
    return False
  return int.from_bytes(head[:8], 'little') <= size - 8


class SafetensorsFile:
  """An open safetensors file (a context manager).

  Attributes:
    path: the file.
    metadata: the header's ``__metadata__`` (string to string), or ``{}``.
  """

  def __init__(self, path):
    from safetensors import safe_open

    self.path = os.fspath(path)
    try:
      self._handle = safe_open(self.path, framework='np')
      self.metadata = self._handle.metadata() or {}
      self._names = list(self._handle.keys())
    except Exception as e:  # noqa: BLE001 - the reader's own error types
      if isinstance(e, FileNotFoundError):
        raise
      raise corrupted(self.path, e) from None

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()

  def close(self):
    handle, self._handle = self._handle, None
    if handle is not None and hasattr(handle, '__exit__'):
      handle.__exit__(None, None, None)

  def names(self) -> list:
    return list(self._names)

  def __contains__(self, name) -> bool:
    return name in self._names

  def shape(self, name) -> tuple:
    return tuple(self._handle.get_slice(name).get_shape())

  def read(self, name, index=None) -> np.ndarray:
    """Tensor ``name``, or its part ``index`` (a tuple of slices).

    Only the bytes of the part asked for are read.
    """
    try:
      if index is None:
        return np.array(self._handle.get_tensor(name))
      part = self._handle.get_slice(name)
      shape = tuple(part.get_shape())
      index = full_index(index, shape)
      if not shape:
        return np.array(self._handle.get_tensor(name))
      wanted = tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))
      if 0 in wanted:  # the reader refuses empty slices
        return np.zeros(wanted, _dtype_of(part.get_dtype()))
      return np.array(part[index])
    except Exception as e:  # noqa: BLE001
      raise corrupted(self.path, f'tensor {name!r}: {e}') from None


def full_index(index, shape) -> tuple:
  """``index`` with one ``slice`` per axis of ``shape``, bounds filled in."""
  index = tuple(index) + (slice(None),) * (len(shape) - len(index))
  out = []
  for s, n in zip(index, shape):
    if not isinstance(s, slice):
      raise TypeError(f'Expected slices, got {s!r}.')
    start, stop, step = s.indices(n)
    if step != 1:
      raise ValueError(f'Strided reads are not supported ({s!r}).')
    out.append(slice(start, max(start, stop)))
  return tuple(out)
