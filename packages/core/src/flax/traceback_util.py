"""Hiding Flax-internal frames from tracebacks.

An exception that leaves a public Flax API (a function decorated with
:func:`api_boundary`, such as ``Module.init`` or ``Module.apply``) loses the
frames of files inside the ``flax`` packages from its traceback, so that it
points at the user's code. JAX's own boundaries (``jax.jit``, ...) hide them
too. The ``flax_filter_frames`` flag (default True) turns this on and off;
:func:`show_flax_in_tracebacks` / :func:`hide_flax_in_tracebacks` set it.

>>> from flax import traceback_util
>>> traceback_util.show_flax_in_tracebacks()
>>> import flax
>>> flax.config.flax_filter_frames
False
>>> traceback_util.hide_flax_in_tracebacks()
>>> flax.config.flax_filter_frames
True
"""

import functools
import os
import sys
import threading
import types

from flax.configurations import config

__all__ = [
  'api_boundary',
  'hide_flax_in_tracebacks',
  'register_exclusion',
  'show_flax_in_tracebacks',
]

_lock = threading.Lock()
_extra_exclusions: list[str] = []
# The exclusions currently registered with JAX, and the flag value they
# were registered for.
_registered: list[str] = []
_registered_for = [None]
# The paths Flax hides (registered with JAX while the flag is on).
_flax_exclusions: set[str] = set()


def _flax_paths() -> list[str]:
  import flax

  paths = [os.path.abspath(p) for p in flax.__path__]
  return paths + list(_extra_exclusions)


def _jax_exclusions():
  try:
    from jax._src import traceback_util as jax_tb
  except ImportError:  # pragma: no cover - depends on the JAX version.
    return None
  paths = getattr(jax_tb, '_exclude_paths', None)
  return paths if isinstance(paths, list) else None


def _sync() -> bool:
  """Makes JAX's exclusion list follow the flag; returns the flag."""
  enabled = bool(config.flax_filter_frames)
  if _registered_for[0] is enabled:
    return enabled
  with _lock:
    jax_paths = _jax_exclusions()
    if jax_paths is not None:
      for path in _registered:
        while path in jax_paths:
          jax_paths.remove(path)
    _registered.clear()
    paths = list(dict.fromkeys(_flax_paths()))
    _flax_exclusions.clear()
    _flax_exclusions.update(paths)
    if enabled:
      _registered.extend(paths)
      if jax_paths is not None:
        jax_paths.extend(_registered)
    _registered_for[0] = enabled
  return enabled


def hide_flax_in_tracebacks() -> None:
  """Hides Flax-internal frames in tracebacks (the default)."""
  config.update('flax_filter_frames', True)
  _sync()


def show_flax_in_tracebacks() -> None:
  """Shows Flax-internal frames in tracebacks (to debug Flax itself)."""
  config.update('flax_filter_frames', False)
  _sync()


def register_exclusion(path: str) -> None:
  """Hides the frames of files under ``path`` too (e.g. a plugin package)."""
  with _lock:
    _extra_exclusions.append(os.path.abspath(path))
    _registered_for[0] = None
  _sync()


def _is_excluded(filename: str, paths) -> bool:
  return any(filename == p or filename.startswith(p + os.sep) for p in paths)


def _filter_traceback(tb, paths):
  kept = []
  while tb is not None:
    if not _is_excluded(tb.tb_frame.f_code.co_filename, paths):
      kept.append((tb.tb_frame, tb.tb_lasti, tb.tb_lineno))
    tb = tb.tb_next
  filtered = None
  for frame, lasti, lineno in reversed(kept):
    filtered = types.TracebackType(filtered, frame, lasti, lineno)
  return filtered


def _under_boundary(frame) -> bool:
  code = _boundary_code()
  frame = frame.f_back
  while frame is not None:
    if frame.f_code is code:
      return True
    frame = frame.f_back
  return False


def api_boundary(fun):
  """Marks ``fun`` as a public entry point of Flax.

  When an exception leaves the outermost such function and the
  ``flax_filter_frames`` flag is on, the frames of files inside the ``flax``
  packages are removed from its traceback (the exception itself is
  unchanged). Nothing is done on calls that do not raise.

  >>> from flax import traceback_util
  >>> @traceback_util.api_boundary
  ... def public_api(x):
  ...   return x + 1
  >>> public_api(1)
  2
  """

  @functools.wraps(fun)
  def flax_api_boundary(*args, **kwargs):
    __tracebackhide__ = True  # noqa: F841 - read by pytest and IPython.
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      if not _sync() or _under_boundary(sys._getframe()):
        raise
      tb = e.__traceback__
      try:
        e.with_traceback(_filter_traceback(tb, _registered))
        raise
      finally:
        del tb

  return flax_api_boundary


@functools.cache
def _boundary_code():
  return api_boundary(lambda: None).__code__


_sync()
