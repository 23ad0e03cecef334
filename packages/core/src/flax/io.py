"""File operations used by Flax's checkpointing code.

The functions work on the local file system through Python's ``os``,
``shutil`` and ``glob`` (mode ``BackendMode.DEFAULT``). When TensorFlow is
installed, ``set_mode(BackendMode.TF)`` routes them through
``tf.io.gfile`` instead, which also reaches remote file systems such as
``gs://``.

>>> import os, tempfile
>>> from flax import io
>>> d = tempfile.mkdtemp()
>>> with io.GFile(os.path.join(d, 'notes.txt'), 'w') as f:
...   _ = f.write('hello')
>>> io.listdir(d), io.getsize(os.path.join(d, 'notes.txt'))
(['notes.txt'], 5)
>>> io.rmtree(d)
"""

import contextlib
import enum
import glob as glob_module
import importlib
import os
import shutil

from flax import errors

__all__ = [
  'BackendMode',
  'GFile',
  'NotFoundError',
  'copy',
  'exists',
  'getsize',
  'glob',
  'io_mode',
  'isdir',
  'listdir',
  'makedirs',
  'override_mode',
  'remove',
  'rename',
  'rmtree',
  'set_mode',
]


class BackendMode(enum.Enum):
  """Which implementation the file operations use.

  Attributes:
    DEFAULT: Python's ``os`` / ``shutil`` / ``glob`` on local files.
    TF: TensorFlow's ``tf.io.gfile`` (needs TensorFlow).
  """

  DEFAULT = 0
  TF = 1


NotFoundError = FileNotFoundError


def _load_gfile():
  try:
    return importlib.import_module('tensorflow').io.gfile
  except ImportError:
    return None


# ``tf.io.gfile`` when TensorFlow is installed (looked up on first use of
# the TF mode), else None.
gfile = None
_gfile_loaded = False
io_mode = BackendMode.DEFAULT


def _tf_gfile():
  global gfile, _gfile_loaded
  if not _gfile_loaded:
    gfile = _load_gfile()
    _gfile_loaded = True
  if gfile is None:
    raise ImportError(
      'flax.io is in BackendMode.TF but TensorFlow is not installed; '
      'install tensorflow or call flax.io.set_mode(BackendMode.DEFAULT).'
    )
  return gfile


def _backend():
  """Returns the gfile module for TF mode, or None for the default mode."""
  if io_mode is BackendMode.DEFAULT:
    return None
  if io_mode is BackendMode.TF:
    return _tf_gfile()
  raise ValueError('Unknown IO Backend Mode.')


def set_mode(override: BackendMode) -> None:
  """Sets the backend of every later file operation.

  >>> from flax import io
  >>> io.set_mode(io.BackendMode.DEFAULT)
  >>> io.io_mode
  <BackendMode.DEFAULT: 0>
  """
  global io_mode
  io_mode = override


@contextlib.contextmanager
def override_mode(override: BackendMode):
  """Uses backend ``override`` inside a ``with`` block.

  >>> from flax import io
  >>> with io.override_mode(io.BackendMode.DEFAULT):
  ...   io.io_mode
  <BackendMode.DEFAULT: 0>
  """
  global io_mode
  previous = io_mode
  io_mode = override
  try:
    yield
  finally:
    io_mode = previous


def GFile(name, mode):  # noqa: N802 - Flax's public name.
  """Opens a file; ``mode`` as for ``open`` (``'r'``, ``'wb'``, ...)."""
  backend = _backend()
  if backend is None:
    return open(name, mode)
  return backend.GFile(name, mode)


def listdir(path):
  """Returns the names of the entries of directory ``path``."""
  backend = _backend()
  if backend is None:
    return os.listdir(path)
  return backend.listdir(path)


def isdir(path):
  """Returns whether ``path`` is a directory."""
  backend = _backend()
  if backend is None:
    return os.path.isdir(path)
  return backend.isdir(path)


def exists(path):
  """Returns whether ``path`` exists."""
  backend = _backend()
  if backend is None:
    return os.path.exists(path)
  return backend.exists(path)


def _refuse_overwrite(dst, overwrite):
  if not overwrite and exists(dst):
    raise errors.AlreadyExistsError(dst)


def copy(src, dst, overwrite=False):
  """Copies file ``src`` to ``dst``.

  Raises:
    AlreadyExistsError: if ``dst`` exists and ``overwrite`` is False.
  """
  backend = _backend()
  if backend is None:
    _refuse_overwrite(dst, overwrite)
    shutil.copy(src, dst)
    return None
  return backend.copy(src, dst, overwrite=overwrite)


def rename(src, dst, overwrite=False):
  """Renames (moves) ``src`` to ``dst``.

  Raises:
    AlreadyExistsError: if ``dst`` exists and ``overwrite`` is False.
  """
  backend = _backend()
  if backend is None:
    _refuse_overwrite(dst, overwrite)
    shutil.move(src, dst)
    return None
  return backend.rename(src, dst, overwrite=overwrite)


def makedirs(path):
  """Creates directory ``path`` and its parents; fine if it exists."""
  backend = _backend()
  if backend is None:
    os.makedirs(path, exist_ok=True)
    return None
  return backend.makedirs(path)


def glob(pattern):
  """Returns the paths matching ``pattern`` (``*``, ``?``, ``[...]``)."""
  backend = _backend()
  if backend is None:
    return glob_module.glob(pattern)
  return backend.glob(pattern)


def remove(path):
  """Removes file ``path``."""
  backend = _backend()
  if backend is None:
    os.remove(path)
    return None
  return backend.remove(path)


def rmtree(path):
  """Removes directory ``path`` and everything in it."""
  backend = _backend()
  if backend is None:
    shutil.rmtree(path)
    return None
  return backend.rmtree(path)


def getsize(path):
  """Returns the size of file ``path`` in bytes."""
  backend = _backend()
  if backend is None:
    return os.path.getsize(path)
  return backend.stat(path).length
