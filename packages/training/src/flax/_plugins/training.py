"""Plugin of the flax-training distribution.

It adds ``Optimizer``, ``ModelAndOptimizer``, the ``OptState`` Variables,
``EMA``, ``Metric``/``MultiMetric`` and the ``metrics`` and ``optimizer``
modules to ``flax.nnx`` (these need the ``flax-training[nnx]`` extra), and
the ``orbax`` checkpoint backend.
"""

from flax.plugins import Backend
from flax.plugins import first_party_exports
from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return first_party_exports('flax-training')


@hookimpl
def flax_checkpoint_backends():
  return [Backend('orbax', 'flax.training._orbax:orbax_backend', 0)]
