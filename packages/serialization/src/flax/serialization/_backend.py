"""The checkpoint-backend protocol and the built-in msgpack backend.

A backend stores numbered checkpoints (steps) of pytrees in a directory.
Third-party packages provide backends through the ``flax_checkpoint_backends``
plugin hook; ``flax.plugins.select_backend('checkpoint', name)`` returns one
and ``flax.serialization.testing.CheckpointBackendContract`` checks one.
"""

import abc
import os
import re
import uuid

from flax import errors
from flax.core.state_dict import from_state_dict
from flax.core.state_dict import to_state_dict
from flax.serialization._decode import MsgpackDecodeError
from flax.serialization._decode import msgpack_restore
from flax.serialization._encode import encode_pieces

# A signed integer or float, as written by ``f'{prefix}{step}'``.
STEP_RE = re.compile(r'[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?')
_INT_RE = re.compile(r'[-+]?\d+')


class CheckpointCorruptedError(MsgpackDecodeError):
  """A checkpoint file is truncated or corrupted; the message names it."""


def parse_step(text: str):
  """``'12'`` -> 12, ``'0.5'`` -> 0.5, anything else -> None."""
  if not STEP_RE.fullmatch(text):
    return None
  return int(text) if _INT_RE.fullmatch(text) else float(text)


def _fsync_dir(directory: str) -> None:
  try:
    fd = os.open(directory, os.O_RDONLY)
  except OSError:
    return
  try:
    os.fsync(fd)
  except OSError:
    pass
  finally:
    os.close(fd)


def ensure_directory(directory: str) -> None:
  """Creates ``directory``; a clear error if a file is in the way."""
  if os.path.exists(directory) and not os.path.isdir(directory):
    raise NotADirectoryError(
      f'Checkpoint directory {directory!r} exists and is not a directory.'
    )
  os.makedirs(directory, exist_ok=True)


def atomic_write(path, data, *, overwrite: bool = True, tmp_path=None) -> None:
  """Writes a file so that readers see either the old file or the new one.

  The data goes to a temporary file in the same directory, is flushed to
  disk (``fsync``), then renamed over ``path``. A process killed at any
  point leaves ``path`` as it was (a stray temporary file at most).

  >>> import os, tempfile
  >>> from flax.serialization import atomic_write
  >>> path = os.path.join(tempfile.mkdtemp(), 'f')
  >>> atomic_write(path, b'hello')
  >>> with open(path, 'rb') as f:
  ...   f.read()
  b'hello'

  Args:
    path: the file to write.
    data: bytes, or an iterable of bytes-like pieces written in order.
    overwrite: if False and ``path`` exists, raise ``FileExistsError``
      (checked atomically) and leave it alone.
    tmp_path: the temporary file to use; by default a unique name next to
      ``path``.
  """
  path = os.fspath(path)
  directory = os.path.dirname(path) or '.'
  if tmp_path is None:
    tmp_path = os.path.join(
      directory, f'.{os.path.basename(path)}.tmp-{uuid.uuid4().hex}'
    )
  pieces = (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data
  try:
    with open(tmp_path, 'wb') as f:
      for piece in pieces:
        f.write(piece)
      f.flush()
      os.fsync(f.fileno())
    if overwrite:
      os.replace(tmp_path, path)
    else:
      # link() fails if ``path`` exists: an atomic "create, never replace".
      os.link(tmp_path, path)
      os.unlink(tmp_path)
  except BaseException:
    try:
      os.unlink(tmp_path)
    except OSError:
      pass
    raise
  _fsync_dir(directory)


def restore_abstract_leaves(target, restored):
  """Places restored arrays where ``target`` has ``jax.ShapeDtypeStruct``s.

  Each abstract leaf's shape is checked, its dtype applied and its sharding
  (if any) used to put the array on devices.
  """
  import jax
  import numpy as np

  def is_abstract(x):
    return isinstance(x, jax.ShapeDtypeStruct)

  if not any(map(is_abstract, jax.tree.leaves(target, is_leaf=is_abstract))):
    return restored

  def place(t, x):
    if not is_abstract(t):
      return x
    x = np.asarray(x)
    if x.shape != tuple(t.shape):
      raise ValueError(
        f'Restored array has shape {x.shape} but the abstract target asks '
        f'for {tuple(t.shape)}.'
      )
    x = x.astype(t.dtype, copy=False)
    sharding = getattr(t, 'sharding', None)
    return (
      jax.device_put(x, sharding)
      if sharding is not None
      else (jax.numpy.asarray(x))
    )

  return jax.tree.map(place, target, restored, is_leaf=is_abstract)


class CheckpointBackend(abc.ABC):
  """A way of storing numbered checkpoints of pytrees in a directory.

  Checkpoint ``step`` of ``prefix`` in ``directory`` is named
  ``f'{prefix}{step}'``; steps are ints or floats and sort numerically.
  Implementations must make saves atomic (an interrupted save leaves the
  previous checkpoints restorable) and never replace an existing
  checkpoint unless asked to.

  Attributes:
    name: the name users select the backend by.
  """

  name: str = ''

  def path(self, directory, step, *, prefix: str = 'checkpoint_') -> str:
    """The path of checkpoint ``step``."""
    return os.path.join(os.fspath(directory), f'{prefix}{step}')

  @abc.abstractmethod
  def save(
    self, directory, step, target, *, prefix='checkpoint_', overwrite=False
  ) -> str:
    """Saves ``target`` as checkpoint ``step``; returns its path.

    Raises:
      flax.errors.InvalidCheckpointError: if checkpoint ``step`` exists and
        ``overwrite`` is False.
      NotADirectoryError: if ``directory`` is a file.
    """

  @abc.abstractmethod
  def restore(self, directory, step=None, target=None, *, prefix='checkpoint_'):
    """Restores checkpoint ``step`` (default: the latest).

    ``target=None`` gives the raw state dict. Otherwise the result has the
    structure of ``target``; its ``jax.ShapeDtypeStruct`` leaves become
    arrays of that shape and dtype, put on their ``sharding``.

    Raises:
      FileNotFoundError: if there is no such checkpoint.
    """

  @abc.abstractmethod
  def steps(self, directory, *, prefix='checkpoint_') -> list:
    """The steps saved in ``directory``, in increasing order."""

  @abc.abstractmethod
  def delete(self, directory, step, *, prefix='checkpoint_') -> None:
    """Deletes checkpoint ``step``."""

  def latest_step(self, directory, *, prefix='checkpoint_'):
    """The highest saved step, or None."""
    steps = self.steps(directory, prefix=prefix)
    return steps[-1] if steps else None

  def __repr__(self):
    return f'{type(self).__name__}(name={self.name!r})'


def list_steps(directory, prefix: str, *, want_dirs=None) -> list:
  """Steps of the entries ``{prefix}{step}`` in ``directory``, sorted."""
  directory = os.fspath(directory)
  try:
    names = os.listdir(directory)
  except (FileNotFoundError, NotADirectoryError):
    return []
  found = {}
  for name in names:
    if not name.startswith(prefix):
      continue
    step = parse_step(name[len(prefix) :])
    if step is None:
      continue
    if want_dirs is not None:
      if os.path.isdir(os.path.join(directory, name)) != want_dirs:
        continue
    found.setdefault(step, name)
  return sorted(found)


def read_file(path: str) -> bytearray:
  """Reads a whole file into one buffer."""
  with open(path, 'rb') as f:
    size = os.fstat(f.fileno()).st_size
    buf = bytearray(size)
    view = memoryview(buf)
    read = 0
    while read < size:
      n = f.readinto(view[read:])
      if not n:
        break
      read += n
  if read != size:
    del view
    del buf[read:]
  return buf


def load_msgpack_file(path: str):
  """Reads a msgpack checkpoint file; a clear error if it is damaged.

  The file is memory-mapped, so its bytes are copied once (into the
  restored arrays) rather than read into a buffer first.
  """
  import mmap

  try:
    with open(path, 'rb') as f:
      size = os.fstat(f.fileno()).st_size
      if size == 0:
        raise MsgpackDecodeError('The file is empty.')
      with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
          return msgpack_restore(view)
        finally:
          view.release()
  except MsgpackDecodeError as e:
    raise CheckpointCorruptedError(
      f'Checkpoint file {path!r} is truncated or corrupted and cannot be '
      f'restored: {e}'
    ) from None


class MsgpackBackend(CheckpointBackend):
  """Checkpoints as single msgpack files (Flax's legacy format).

  The file ``{directory}/{prefix}{step}`` holds ``to_bytes(target)``.

  >>> import tempfile
  >>> from flax.serialization import msgpack_backend
  >>> d = tempfile.mkdtemp()
  >>> _ = msgpack_backend.save(d, 3, {'w': [1, 2]})
  >>> msgpack_backend.steps(d), msgpack_backend.restore(d)
  ([3], {'w': {'0': 1, '1': 2}})
  """

  name = 'msgpack'

  def save(
    self, directory, step, target, *, prefix='checkpoint_', overwrite=False
  ) -> str:
    directory = os.fspath(directory)
    ensure_directory(directory)
    path = self.path(directory, step, prefix=prefix)
    if not overwrite and os.path.exists(path):
      raise errors.InvalidCheckpointError(path, step)
    pieces = encode_pieces(to_state_dict(target))
    try:
      atomic_write(path, pieces, overwrite=overwrite)
    except FileExistsError:
      raise errors.InvalidCheckpointError(path, step) from None
    return path

  def restore(self, directory, step=None, target=None, *, prefix='checkpoint_'):
    directory = os.fspath(directory)
    if step is None:
      step = self.latest_step(directory, prefix=prefix)
      if step is None:
        raise FileNotFoundError(
          f'No checkpoint with prefix {prefix!r} in {directory!r}.'
        )
    path = self.path(directory, step, prefix=prefix)
    if not os.path.isfile(path):
      raise FileNotFoundError(f'Matching checkpoint not found: {path}')
    state = load_msgpack_file(path)
    if target is None:
      return state
    return restore_abstract_leaves(target, from_state_dict(target, state))

  def steps(self, directory, *, prefix='checkpoint_') -> list:
    return list_steps(directory, prefix, want_dirs=False)

  def delete(self, directory, step, *, prefix='checkpoint_') -> None:
    os.remove(self.path(directory, step, prefix=prefix))


msgpack_backend = MsgpackBackend()
