"""Plugin of the flax-linen distribution: what it adds to Flax namespaces.

``flax.linen`` defines its Module system itself. The layer submodules
(``nn.initializers``, ``nn.linear``, ...) are exported by flax-layers and
``nn.spmd`` by flax-spmd; here only ``nn.partitioning`` (an alias module of
flax-linen over flax-spmd) is registered for attribute access.
"""

from flax.plugins import Export
from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return [Export('flax.linen', 'partitioning', 'flax.linen.partitioning')]
