"""Plugin of the flax-training distribution: what it adds to Flax namespaces."""

from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return []
