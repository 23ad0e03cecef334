"""Plugin of the flax-layers distribution.

Exports the Linen layer classes into ``flax.linen`` and the NNX ones into
``flax.nnx``, and the layer modules as ``flax.linen.linear`` and the like.
The names are listed once, in the first-party export table of flax-core
(``flax.plugins.first_party_exports``), which also tells users what to
install when flax-layers is missing.
"""

from flax.plugins import first_party_exports
from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return first_party_exports('flax-layers')
