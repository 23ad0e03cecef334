"""Plugin of the flax-nnx distribution: what it adds to Flax namespaces."""

from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return []
