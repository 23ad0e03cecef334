"""Hiding Flax-internal frames from tracebacks.

Public Flax APIs (``Module.init``, ``Module.apply``, ...) are JAX API
boundaries (:func:`api_boundary` is JAX's own): an exception leaving them is
treated as JAX treats one leaving ``jax.jit``, following JAX's
``jax_traceback_filtering`` mode (``'off'``, ``'tracebackhide'``,
``'remove_frames'``, ...). While Flax frames are hidden (the default,
``flax_filter_frames``), the files of the ``flax`` packages are among the
paths JAX filters; :func:`show_flax_in_tracebacks` /
:func:`hide_flax_in_tracebacks` change the flag and JAX's list.

>>> from flax import traceback_util
>>> traceback_util.show_flax_in_tracebacks()
>>> import flax
>>> flax.config.flax_filter_frames
False
>>> traceback_util.hide_flax_in_tracebacks()
>>> flax.config.flax_filter_frames
True
"""

import os
import threading

from jax._src import traceback_util as jax_traceback_util

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
  paths = getattr(jax_traceback_util, '_exclude_paths', None)
  return paths if isinstance(paths, list) else None


def _sync() -> bool:
  """Makes JAX's exclusion list follow the flag; returns the flag.

  Runs at import and from the functions below (as in Flax 0.12.8, a bare
  ``flax.config.update('flax_filter_frames', ...)`` changes the flag only).
  """
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


# JAX's own API boundary: what happens to a traceback depends on JAX's
# ``jax_traceback_filtering`` mode and the paths registered above.
api_boundary = jax_traceback_util.api_boundary


_sync()
