"""The checkpoint-backend protocol and the built-in msgpack backend.

A backend stores numbered checkpoints (steps) of pytrees in a directory.
Third-party packages provide backends through the ``flax_checkpoint_backends``
plugin hook; ``flax.plugins.select_backend('checkpoint', name)`` returns one
and ``flax.serialization.testing.CheckpointBackendContract`` checks one.
"""

import abc
import contextlib
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
    sharding = getattr(t, 'sharding', None)
    if (
      isinstance(x, jax.Array)
      and x.shape == tuple(t.shape)
      and x.dtype == t.dtype
      and (sharding is None or x.sharding == sharding)
    ):
      return x  # already placed (possibly over several processes)
    x = np.asarray(x)
    if x.shape != tuple(t.shape):
      raise ValueError(
        f'Restored array has shape {x.shape} but the abstract target asks '
        f'for {tuple(t.shape)}.'
      )
    x = x.astype(t.dtype, copy=False)
    return (
      jax.device_put(x, sharding)
      if sharding is not None
      else (jax.numpy.asarray(x))
    )

  return jax.tree.map(place, target, restored, is_leaf=is_abstract)


class PendingCheckpoint:
  """A checkpoint written under a temporary name, not yet visible.

  ``CheckpointBackend.stage`` returns one. ``publish`` moves it to its
  step's name in one atomic rename; leaving the ``with`` block (or calling
  ``discard``) removes whatever was not published, so a failed save leaves
  the directory as it was.

  Attributes:
    backend: the backend that wrote it.
    temp: where the data lies now.
    path: the step's path it is published to.
    step: the step.
  """

  def __init__(self, backend, temp, path, step):
    self.backend = backend
    self.temp = temp
    self.path = path
    self.step = step

  def publish(self, *, overwrite: bool = False) -> None:
    """Makes the checkpoint visible at ``path``.

    Raises:
      flax.errors.InvalidCheckpointError: if ``path`` exists and
        ``overwrite`` is False (nothing is replaced then).
    """
    try:
      move_into_place(self.temp, self.path, overwrite=overwrite)
    except FileExistsError:
      raise errors.InvalidCheckpointError(self.path, self.step) from None

  def discard(self) -> None:
    """Removes the temporary data if it is still there."""
    remove_path(self.temp)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.discard()


def remove_path(path) -> None:
  """Deletes a file or a directory tree; a missing ``path`` is fine."""
  import shutil

  if os.path.isdir(path) and not os.path.islink(path):
    shutil.rmtree(path, ignore_errors=True)
  else:
    try:
      os.unlink(path)
    except OSError:
      pass


def move_into_place(temp, path, *, overwrite: bool) -> None:
  """Renames ``temp`` (a file or a directory) to ``path`` atomically.

  Without ``overwrite``, an existing ``path`` is left alone and
  ``FileExistsError`` raised. With it, the old checkpoint is replaced: a
  file by one ``os.replace``; a directory is first renamed aside, so the
  step's name never shows a mix of the two.

  Raises:
    FileExistsError: if ``path`` exists and ``overwrite`` is False.
  """
  temp, path = os.fspath(temp), os.fspath(path)
  replacing_file = not os.path.isdir(temp) and not os.path.isdir(path)
  if overwrite and replacing_file:
    os.replace(temp, path)
  elif not overwrite and not os.path.isdir(temp):
    # link() fails when ``path`` exists: an atomic "create, never replace".
    os.link(temp, path)
    os.unlink(temp)
  else:
    if os.path.lexists(path):
      if not overwrite:
        raise FileExistsError(path)
      _rename_aside_and_drop(path)
    try:
      os.rename(temp, path)
    except OSError as e:  # another writer created ``path`` meanwhile
      if os.path.lexists(path):
        raise FileExistsError(path) from e
      raise
  _fsync_dir(os.path.dirname(path) or '.')


def _rename_aside_and_drop(path) -> None:
  aside = unique_temp_path(path, 'old')
  os.rename(path, aside)
  remove_path(aside)


def unique_temp_path(path, kind: str = 'tmp') -> str:
  """A hidden name next to ``path`` that no other save uses."""
  directory, name = os.path.split(os.fspath(path))
  return os.path.join(
    directory, f'.{name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:12]}'
  )


@contextlib.contextmanager
def directory_lock(directory):
  """Holds an exclusive lock on ``directory`` while the block runs.

  The lock is an ``flock`` on the directory itself (no lock file), which
  the system drops when the process dies: a killed save never leaves the
  directory locked. Where ``flock`` is missing the block runs unlocked;
  the atomic publish still keeps every step whole.
  """
  try:
    import fcntl
  except ImportError:  # not POSIX
    fcntl = None
  fd = None
  if fcntl is not None:
    try:
      fd = os.open(os.fspath(directory), os.O_RDONLY)
      fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
      if fd is not None:
        os.close(fd)
      fd = None
  try:
    yield
  finally:
    if fd is not None:
      os.close(fd)


def _copy_arrays(target):
  import jax
  import numpy as np

  return jax.tree.map(
    lambda x: x.copy() if isinstance(x, np.ndarray) else x, target
  )


class CheckpointBackend(abc.ABC):
  """A way of storing numbered checkpoints of pytrees in a directory.

  Checkpoint ``step`` of ``prefix`` in ``directory`` is the file or
  directory ``f'{prefix}{step}'``; steps are ints or floats and sort
  numerically. A backend implements three things:

  * ``write(path, payload)``: store a checkpoint at a fresh ``path``;
  * ``read(path, target)``: restore the checkpoint at ``path``;
  * ``is_checkpoint(path)``: whether ``path`` holds one of its checkpoints;

  and may refine ``snapshot`` (capture a target at call time, for
  background saves), ``wait`` (finish its own background work) and
  ``multiprocess`` (whether all processes of a job write together).

  Everything else (atomic saves through a temporary name, listing,
  deletion, the directory lock) is built here on those, and
  ``flax.training.checkpoints`` uses only this interface, so every
  backend gets the same guarantees: a save is never half visible, an
  interrupted one leaves the previous checkpoints restorable, and an
  existing step is replaced only when asked.

  Attributes:
    name: the name users select the backend by.
    multiprocess: True if every process of a multi-process job takes part
      in a save (the backend coordinates them and handles arrays spread
      over processes); False if process 0 alone writes.
    allows_older_steps: True if ``flax.training.checkpoints`` may save a
      step older than the latest one (only an existing step is refused, with
      ``ValueError``, as Orbax does); False if each save must be newer than
      the latest (``InvalidCheckpointError``, Flax's msgpack rule).
  """

  name: str = ''
  multiprocess: bool = False
  allows_older_steps: bool = False

  # -- what a backend implements ---------------------------------------------

  @abc.abstractmethod
  def write(self, path: str, payload) -> None:
    """Stores ``payload`` (from ``snapshot``) as a checkpoint at ``path``.

    ``path`` is a temporary name unique to this save; it need not be
    written atomically. It may be a file or a directory.
    """

  @abc.abstractmethod
  def read(self, path: str, target=None):
    """Restores the checkpoint at ``path``.

    ``target=None`` gives the raw state dict. Otherwise the result has the
    structure of ``target``; its ``jax.ShapeDtypeStruct`` leaves become
    arrays of that shape and dtype, put on their ``sharding``.
    """

  @abc.abstractmethod
  def is_checkpoint(self, path: str) -> bool:
    """Whether ``path`` holds a checkpoint this backend reads."""

  def snapshot(self, target):
    """What ``write`` will store: ``target`` as it is now.

    Called in the caller's thread, so later changes to ``target`` do not
    reach a save that runs in the background. The default copies NumPy
    leaves.
    """
    return _copy_arrays(target)

  def wait(self) -> None:
    """Waits for background work of the backend's own (default: none)."""

  # -- built on the above ----------------------------------------------------

  def path(self, directory, step, *, prefix: str = 'checkpoint_') -> str:
    """The path of checkpoint ``step``."""
    return os.path.join(os.fspath(directory), f'{prefix}{step}')

  def lock(self, directory):
    """A context manager serializing publishes into ``directory``."""
    return directory_lock(directory)

  def stage(
    self, directory, step, payload, *, prefix='checkpoint_', temp=None
  ) -> PendingCheckpoint:
    """Writes ``payload`` under a temporary name next to checkpoint ``step``.

    Args:
      directory: the checkpoint directory (it must exist).
      step: the step.
      payload: what ``snapshot`` returned.
      prefix: the name prefix.
      temp: the temporary path; by default one unique to this save.
    """
    path = self.path(directory, step, prefix=prefix)
    temp = unique_temp_path(path) if temp is None else temp
    pending = PendingCheckpoint(self, temp, path, step)
    try:
      self.write(temp, payload)
    except BaseException:
      pending.discard()
      raise
    return pending

  def save(
    self, directory, step, target, *, prefix='checkpoint_', overwrite=False
  ) -> str:
    """Saves ``target`` as checkpoint ``step``; returns its path.

    Raises:
      flax.errors.InvalidCheckpointError: if checkpoint ``step`` exists and
        ``overwrite`` is False.
      NotADirectoryError: if ``directory`` is a file.
    """
    directory = os.fspath(directory)
    ensure_directory(directory)
    path = self.path(directory, step, prefix=prefix)
    if not overwrite and os.path.lexists(path):
      raise errors.InvalidCheckpointError(path, step)
    with self.stage(directory, step, self.snapshot(target), prefix=prefix) as p:
      with self.lock(directory):
        p.publish(overwrite=overwrite)
    return path

  def restore(self, directory, step=None, target=None, *, prefix='checkpoint_'):
    """Restores checkpoint ``step`` (default: the latest); see ``read``.

    Raises:
      FileNotFoundError: if there is no such checkpoint.
    """
    directory = os.fspath(directory)
    if step is None:
      step = self.latest_step(directory, prefix=prefix)
      if step is None:
        raise FileNotFoundError(
          f'No checkpoint with prefix {prefix!r} in {directory!r}.'
        )
    path = self.path(directory, step, prefix=prefix)
    if not self.is_checkpoint(path):
      raise FileNotFoundError(f'Matching checkpoint not found: {path}')
    self.wait()
    return self.read(path, target)

  def steps(self, directory, *, prefix='checkpoint_') -> list:
    """The steps of this backend's checkpoints in ``directory``, sorted."""
    directory = os.fspath(directory)
    return [
      step
      for step, name in list_entries(directory, prefix)
      if self.is_checkpoint(os.path.join(directory, name))
    ]

  def latest_step(self, directory, *, prefix='checkpoint_'):
    """The highest saved step, or None."""
    steps = self.steps(directory, prefix=prefix)
    return steps[-1] if steps else None

  def delete(self, directory, step, *, prefix='checkpoint_') -> None:
    """Deletes checkpoint ``step``."""
    self.wait()
    for found, name in list_entries(directory, prefix):
      if found == step:
        remove_path(os.path.join(os.fspath(directory), name))

  def __repr__(self):
    return f'{type(self).__name__}(name={self.name!r})'


def list_entries(directory, prefix: str) -> list:
  """``(step, name)`` of the entries ``{prefix}{step}``, sorted by step.

  Hidden temporary names never match (a step must follow ``prefix``).
  """
  directory = os.fspath(directory)
  try:
    names = os.listdir(directory)
  except (FileNotFoundError, NotADirectoryError):
    return []
  found = []
  for name in names:
    if name.startswith(prefix):
      step = parse_step(name[len(prefix) :])
      if step is not None:
        found.append((step, name))
  return sorted(found, key=lambda entry: entry[0])


def list_steps(directory, prefix: str, *, want_dirs=None) -> list:
  """Steps of the entries ``{prefix}{step}`` in ``directory``, sorted.

  ``want_dirs`` keeps only directories (True) or only files (False).
  """
  directory = os.fspath(directory)
  steps = []
  for step, name in list_entries(directory, prefix):
    if want_dirs is not None:
      if os.path.isdir(os.path.join(directory, name)) != want_dirs:
        continue
    if not steps or steps[-1] != step:
      steps.append(step)
  return steps


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

  def snapshot(self, target):
    # Encoding now copies the data: the payload is the file's bytes.
    return b''.join(encode_pieces(to_state_dict(target)))

  def write(self, path, payload) -> None:
    with open(path, 'wb') as f:
      f.write(payload)
      f.flush()
      os.fsync(f.fileno())

  def read(self, path, target=None):
    state = load_msgpack_file(path)
    if target is None:
      return state
    return restore_abstract_leaves(target, from_state_dict(target, state))

  def is_checkpoint(self, path) -> bool:
    return os.path.isfile(path)


msgpack_backend = MsgpackBackend()
