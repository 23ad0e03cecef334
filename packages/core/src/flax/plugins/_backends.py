"""Choosing a checkpoint or partitioning backend."""

import contextlib
import threading

from flax.plugins import _registry

KINDS = ('checkpoint', 'partitioning')
_local = threading.local()


def _stack(kind):
  stacks = getattr(_local, 'stacks', None)
  if stacks is None:
    stacks = _local.stacks = {k: [] for k in KINDS}
  return stacks[kind]


def _check_kind(kind):
  if kind not in KINDS:
    raise ValueError(
      f'Unknown backend kind {kind!r}; expected one of {", ".join(KINDS)}.'
    )


@contextlib.contextmanager
def use_backend(kind: str, name: str):
  """Selects backend ``name`` of ``kind`` inside a ``with`` block."""
  _check_kind(kind)
  _stack(kind).append(name)
  try:
    yield
  finally:
    _stack(kind).pop()


def requested_backend(kind: str):
  """The backend name asked for by a ``use_backend`` block or the config.

  Returns None when neither names one (the choice then falls to priority).
  """
  _check_kind(kind)
  if _stack(kind):
    return _stack(kind)[-1]
  from flax.configurations import config

  return getattr(config, f'flax_{kind}_backend') or None


def backend_names(kind: str):
  """Names of the available backends of ``kind``, highest priority first."""
  _check_kind(kind)
  found = _registry.registry().backends(kind)
  return sorted(found, key=lambda n: (-found[n][1].priority, n))


def select_backend(kind: str, name=None):
  """Returns the backend object of ``kind``.

  The choice is: the ``name`` argument, else the innermost ``use_backend``
  block, else the ``flax_<kind>_backend`` config flag (or its
  ``FLAX_<KIND>_BACKEND`` environment variable), else the available backend
  of highest priority.
  """
  if name is None:
    name = requested_backend(kind)
  reg = _registry.registry()
  if name is None:
    names = backend_names(kind)
    if not names:
      raise _registry.PluginError(
        f'No {kind} backend is installed; install a distribution that '
        f'provides one (e.g. flax-serialization for checkpoints).'
      )
    name = names[0]
  record = reg.backend(kind, name)
  if record is None:
    known = ', '.join(repr(n) for n in backend_names(kind)) or 'none'
    raise ValueError(
      f'Unknown {kind} backend {name!r}; available {kind} backends: {known}.'
    )
  return record.load()
