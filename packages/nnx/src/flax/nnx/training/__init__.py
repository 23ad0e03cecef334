import importlib

"""``flax.nnx.training``: NNX optimizer, metrics and EMA.

The implementations ship in the ``flax-training`` distribution (install
``flax-training[nnx]``); the submodules here are aliases of
``flax.training.nnx.{optimizer,metrics,ema}``, imported on first access.
"""

_SUBMODULES = ('ema', 'metrics', 'optimizer')


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f'{__name__}.{name}')
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
  return sorted(_SUBMODULES)
