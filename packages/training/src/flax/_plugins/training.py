"""Plugin of the flax-training distribution.

It adds ``Optimizer``, ``ModelAndOptimizer``, the ``OptState`` Variables,
``EMA``, ``Metric``/``MultiMetric`` and the ``metrics`` and ``optimizer``
modules to ``flax.nnx`` (these need the ``flax-training[nnx]`` extra), and
the ``orbax`` checkpoint backend.
"""

from flax.plugins import Backend
from flax.plugins import Export
from flax.plugins import hookimpl

_OPT = 'flax.training.nnx.optimizer'
_METRICS = 'flax.training.nnx.metrics'
_EMA = 'flax.training.nnx.ema'


@hookimpl
def flax_exports():
  return [
    Export('flax.nnx', 'Optimizer', f'{_OPT}:Optimizer'),
    Export('flax.nnx', 'ModelAndOptimizer', f'{_OPT}:ModelAndOptimizer'),
    Export('flax.nnx', 'OptState', f'{_OPT}:OptState'),
    Export('flax.nnx', 'OptArray', f'{_OPT}:OptArray'),
    Export('flax.nnx', 'OptVariable', f'{_OPT}:OptVariable'),
    Export('flax.nnx', 'optimizer', _OPT),
    Export('flax.nnx', 'metrics', _METRICS),
    Export('flax.nnx', 'Metric', f'{_METRICS}:Metric'),
    Export('flax.nnx', 'MultiMetric', f'{_METRICS}:MultiMetric'),
    Export('flax.nnx', 'EMA', f'{_EMA}:EMA'),
  ]


@hookimpl
def flax_checkpoint_backends():
  return [Backend('orbax', 'flax.training._orbax:orbax_backend', 0)]
