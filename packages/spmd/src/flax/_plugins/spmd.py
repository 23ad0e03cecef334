"""Plugin of the flax-spmd distribution.

Its names in ``flax.linen`` (``nn.with_logical_partitioning``, ...,
``nn.spmd`` and ``nn.partitioning``) are listed in the first-party export
table of flax-core; here are also the partitioning backends.
"""

from flax.plugins import Backend
from flax.plugins import first_party_exports
from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return first_party_exports('flax-spmd')


@hookimpl
def flax_partitioning_backends():
  return [
    Backend('jax', 'flax.spmd._backends:JAX', priority=100),
    Backend('none', 'flax.spmd._backends:NONE', priority=0),
  ]
