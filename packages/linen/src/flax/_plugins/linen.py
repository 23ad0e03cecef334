"""Plugin of the flax-linen distribution: what it adds to Flax namespaces.

``flax.linen`` defines its Module system itself; the names it loads on
first access (``nn.jit``, ``nn.tabulate``, ...) are its part of the
first-party export table of flax-core. The layer submodules
(``nn.initializers``, ``nn.linear``, ...) are exported by flax-layers and
``nn.spmd`` / ``nn.partitioning`` by flax-spmd.
"""

from flax.plugins import first_party_exports
from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return first_party_exports('flax-linen')
