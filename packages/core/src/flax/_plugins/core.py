"""Plugin of the flax-core distribution: what it adds to Flax namespaces."""

from flax.plugins import first_party_exports
from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return first_party_exports('flax-core')
