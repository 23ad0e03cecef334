"""Plugin of the flax-spmd distribution: what it adds to Flax namespaces."""

from flax.plugins import Backend
from flax.plugins import Export
from flax.plugins import hookimpl

# Names flax-spmd adds to flax.linen (flax.linen itself defines
# Partitioned, with_partitioning, get_partition_spec, get_sharding,
# PARTITION_NAME and unbox).
_LINEN_NAMES = (
  'LogicallyPartitioned',
  'RulesFallback',
  'get_logical_axis_rules',
  'logical_axis_rules',
  'logical_to_mesh',
  'logical_to_mesh_axes',
  'logical_to_mesh_sharding',
  'set_logical_axis_rules',
  'with_logical_constraint',
  'with_logical_partitioning',
)


@hookimpl
def flax_exports():
  exports = [
    Export('flax.linen', name, f'flax.spmd:{name}') for name in _LINEN_NAMES
  ]
  # ``from flax.linen import spmd`` (Flax's flax.linen.spmd module), and
  # ``nn.meta.PARTITION_NAME`` (flax.linen re-exports flax.core.meta; if
  # flax.linen defines ``meta`` itself, its own wins).
  exports.append(Export('flax.linen', 'spmd', 'flax.spmd'))
  exports.append(Export('flax.linen', 'meta', 'flax.core.meta'))
  return exports


@hookimpl
def flax_partitioning_backends():
  return [
    Backend('jax', 'flax.spmd._backends:JAX', priority=100),
    Backend('none', 'flax.spmd._backends:NONE', priority=0),
  ]
