"""Sharding helpers for NNX Variables (``out_sharding`` metadata).

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> p = nnx.Param(jnp.ones((2, 4)), out_sharding=(None, 'model'))
>>> nnx.get_partition_spec(nnx.State({'w': p}))['w'].value
P(None, 'model')
"""

import jax

from flax.nnx.variablelib import Variable, with_metadata

PARTITION_NAME = 'partition_name'


def _spec_of(x):
  from jax.sharding import PartitionSpec

  if isinstance(x, Variable):
    names = x.get_metadata('out_sharding', None)
    spec = PartitionSpec(*names) if names is not None else PartitionSpec()
    return x.copy(spec)
  return PartitionSpec()


def get_partition_spec(tree):
  """Maps every Variable (or array) of ``tree`` to its PartitionSpec."""
  return jax.tree.map(_spec_of, tree, is_leaf=lambda x: isinstance(x, Variable))


def get_named_sharding(tree, mesh):
  """Maps every Variable of ``tree`` to a NamedSharding on ``mesh``."""
  from jax.sharding import NamedSharding

  specs = get_partition_spec(tree)
  return jax.tree.map(
    lambda s: (
      s.copy(NamedSharding(mesh, s.raw_value))
      if isinstance(s, Variable)
      else NamedSharding(mesh, s)
    ),
    specs,
    is_leaf=lambda x: isinstance(x, Variable),
  )


def with_partitioning(initializer, sharding, mesh=None, **metadata):
  """Wraps ``initializer`` so that its Variable gets ``out_sharding``."""
  return with_metadata(
    initializer, out_sharding=tuple(sharding), mesh=mesh, **metadata
  )
