"""Plugin of the flax-training distribution.

It adds ``Optimizer``, ``ModelAndOptimizer``, the ``OptState`` Variables and
the ``metrics`` module to ``flax.nnx``, and the ``orbax`` checkpoint backend.
"""

from flax.plugins import Backend
from flax.plugins import Export
from flax.plugins import hookimpl

_OPT = 'flax.training.nnx.optimizer'
_METRICS = 'flax.training.nnx.metrics'


@hookimpl
def flax_exports():
  return [
    Export('flax.nnx', 'Optimizer', f'{_OPT}:Optimizer'),
    Export('flax.nnx', 'ModelAndOptimizer', f'{_OPT}:ModelAndOptimizer'),
    Export('flax.nnx', 'OptState', f'{_OPT}:OptState'),
    Export('flax.nnx', 'OptArray', f'{_OPT}:OptArray'),
    Export('flax.nnx', 'OptVariable', f'{_OPT}:OptVariable'),
    Export('flax.nnx', 'metrics', _METRICS),
    Export('flax.nnx', 'MultiMetric', f'{_METRICS}:MultiMetric'),
  ]


@hookimpl
def flax_checkpoint_backends():
  return [Backend('orbax', 'flax.training._orbax:orbax_backend', 0)]
