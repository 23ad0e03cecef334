"""Plugin of the flax-serialization distribution: what it adds to Flax namespaces."""

from flax.plugins import hookimpl


@hookimpl
def flax_exports():
  return []
