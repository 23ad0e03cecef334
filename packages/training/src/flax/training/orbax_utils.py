"""Helpers that build Orbax save / restore arguments from a target pytree.

>>> import numpy as np
>>> from flax.training import orbax_utils
>>> args = orbax_utils.save_args_from_target({'w': np.zeros(3)})
>>> type(args['w']).__name__
'SaveArgs'
"""

import numpy as np

from flax.training._orbax import ocp

__all__ = ['restore_args_from_target', 'save_args_from_target']


def _is_multiprocess_array(value) -> bool:
  import jax

  return isinstance(value, jax.Array) and not value.is_fully_addressable


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
