"""Publishing msgpack checkpoint files safely when several writers share a
directory.

A save writes its bytes to a temporary file with a name of its own, flushes
it to disk, then, holding a lock on the directory, checks that its step may
still be written, moves the file into place and prunes old checkpoints. So a
step's file only ever holds that step's data, whatever other processes do,
and the writer that loses a race gets ``InvalidCheckpointError``.
"""

import contextlib
import os
import uuid

try:
  import fcntl
except ImportError:  # pragma: no cover - not POSIX; the link below still
  fcntl = None  # keeps a step's file whole, only the pruning is unguarded.


def temp_path(ckpt_path: str) -> str:
  """A temporary name next to ``ckpt_path``, unique to this save."""
  directory, name = os.path.split(ckpt_path)
  return os.path.join(
    directory, f'.{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:12]}'
  )


def write_temp(path: str, pieces) -> None:
  """Writes ``pieces`` to ``path`` and flushes them to disk."""
  with open(path, 'wb') as f:
    for piece in pieces:
      f.write(piece)
    f.flush()
    os.fsync(f.fileno())


def remove_quietly(path: str) -> None:
  try:
    os.unlink(path)
  except OSError:
    pass


def fsync_dir(directory: str) -> None:
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


@contextlib.contextmanager
def directory_lock(directory: str):
  """Holds an exclusive lock on ``directory`` (no file is created for it).

  The lock is an ``flock`` on the directory itself; the system drops it when
  the process dies, so a killed save never leaves the directory locked.
  """
  fd = None
  if fcntl is not None:
    try:
      fd = os.open(directory, os.O_RDONLY)
      fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # a file system without flock: link() still guards
      if fd is not None:
        os.close(fd)
      fd = None
  try:
    yield
  finally:
    if fd is not None:
      os.close(fd)  # releases the lock


def publish(tmp: str, ckpt_path: str, *, overwrite: bool) -> None:
  """Moves the finished temporary file to ``ckpt_path``.

  Raises:
    FileExistsError: if ``overwrite`` is False and ``ckpt_path`` exists.
  """
  if overwrite:
    os.replace(tmp, ckpt_path)
  else:
    # link() never replaces an existing file: an atomic "create only".
    os.link(tmp, ckpt_path)
    os.unlink(tmp)
  fsync_dir(os.path.dirname(ckpt_path) or '.')
