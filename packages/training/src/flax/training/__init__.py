"""flax.training: TrainState, checkpoints and other training utilities.

Its modules load on first attribute access, so ``flax.training.train_state``
works after a plain ``import flax.training``:

>>> import flax.training
>>> flax.training.train_state.TrainState.__name__
'TrainState'
"""

import importlib as _importlib

from flax.plugins import lazy_namespace as _lazy_namespace

_MODULES = frozenset(
  {
    'checkpoints',
    'common_utils',
    'dynamic_scale',
    'early_stopping',
    'lr_schedule',
    'orbax_utils',
    'prefetch_iterator',
    'train_state',
  }
)

_namespace_getattr, _namespace_dir = _lazy_namespace(__name__)


def __getattr__(name):
  if name in _MODULES:
    return _importlib.import_module(f'{__name__}.{name}')
  return _namespace_getattr(name)


def __dir__():
  return sorted(set(_namespace_dir()) | _MODULES)
