"""``flax.nnx`` under its older path ``flax.experimental.nnx``.

A module of its own whose names are those of ``flax.nnx`` (looked up there
on first use, layer names included), so code importing the old path keeps
working:

>>> from flax import nnx
>>> from flax.experimental import nnx as old_nnx
>>> old_nnx.Module is nnx.Module, old_nnx.__name__
(True, 'flax.experimental.nnx')
"""

from flax import nnx as _nnx


def __getattr__(name):
  if name.startswith('__'):
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  value = getattr(_nnx, name)
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(dir(_nnx)) | set(globals()))
