"""Helpers that build Orbax save / restore arguments from a target pytree.

>>> import numpy as np
>>> from flax.training import orbax_utils
>>> args = orbax_utils.save_args_from_target({'w': np.zeros(3)})
>>> type(args['w']).__name__
'SaveArgs'
"""

import numpy as np

from flax.training._orbax import ocp

__all__ = [
  'is_multi_device_array',
  'maybe_construct_transformations',
  'restore_args_from_target',
  'save_args_from_target',
]


def _is_multiprocess_array(value) -> bool:
  import jax

  return isinstance(value, jax.Array) and not value.is_fully_addressable


def is_multi_device_array(value) -> bool:
  """Whether ``value`` is a ``jax.Array`` split (not replicated) over devices.

  >>> import jax.numpy as jnp
  >>> from flax.training import orbax_utils
  >>> orbax_utils.is_multi_device_array(jnp.ones(3))
  False

  Args:
    value: any leaf of a checkpoint target.
  """
  import jax

  return isinstance(value, jax.Array) and not value.is_fully_replicated


def maybe_construct_transformations(target, transforms):
  """The Orbax restore transformations to use for ``target``.

  ``transforms`` when given; without a target, one fallback transformation
  that restores every saved entry as it is; otherwise none.

  >>> from flax.training import orbax_utils
  >>> orbax_utils.maybe_construct_transformations({'w': 1}, None)
  {}
  >>> list(orbax_utils.maybe_construct_transformations(None, None))
  ['']

  Args:
    target: the restore target, or None.
    transforms: explicit Orbax transformations, or None.
  """
  if transforms is not None:
    return transforms
  if target is None:
    return {'': ocp().Transform(use_fallback=True)}
  return {}


def save_args_from_target(target):
  """Returns a tree of ``orbax.checkpoint.SaveArgs`` shaped like ``target``.

  Small arrays are aggregated into one file (faster), arrays spread over
  several processes are not.

  Args:
    target: the pytree to save.
  """
  import jax

  o = ocp()
  return jax.tree.map(
    lambda x: (
      o.SaveArgs(aggregate=False) if _is_multiprocess_array(x) else o.SaveArgs()
    ),
    target,
  )


def restore_args_from_target(target, mesh=None):
  """Returns a tree of Orbax ``RestoreArgs`` shaped like ``target``.

  JAX arrays (and ``jax.ShapeDtypeStruct``) are restored with their
  sharding (or, with ``mesh``, fully replicated over it); NumPy arrays as
  NumPy arrays; other leaves as they are.

  Args:
    target: the pytree to restore into.
    mesh: a ``jax.sharding.Mesh`` for arrays whose target has no sharding.
  """
  import jax

  o = ocp()

  def find_sharding(x):
    if mesh is not None:
      return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    return getattr(x, 'sharding', None)

  def args(x):
    if isinstance(x, (jax.Array, jax.ShapeDtypeStruct)):
      return o.ArrayRestoreArgs(
        restore_type=jax.Array,
        sharding=find_sharding(x),
        global_shape=tuple(x.shape),
        dtype=x.dtype,
      )
    if isinstance(x, np.ndarray):
      return o.RestoreArgs(restore_type=np.ndarray, dtype=x.dtype)
    return o.RestoreArgs(restore_type=type(x) if x is not None else None)

  return jax.tree.map(args, target)
