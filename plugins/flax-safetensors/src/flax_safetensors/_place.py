"""Turning tensors of a file (or a dict) into arrays on their devices.

A *reader* is a function ``read(index)`` returning the part ``index`` (a
tuple of slices, or None for everything) of one tensor as a NumPy array.
``place`` calls it once per device shard, so an array with a sharding is
built from the slices its devices hold, never whole on one device.
"""

import numpy as np

from flax_safetensors._files import full_index


def transposed(read, perm, shape):
  """A reader in the target layout of a tensor stored as ``x.transpose(perm)``.

  Args:
    read: reader of the stored tensor.
    perm: the permutation that turned the target layout into the stored
      one, or None.
    shape: the target shape.
  """
  if perm is None:
    return read
  inverse = tuple(int(i) for i in np.argsort(perm))

  def read_transposed(index):
    if index is None:
      return read(None).transpose(inverse)
    index = full_index(index, shape)
    return read(tuple(index[p] for p in perm)).transpose(inverse)

  return read_transposed


def as_bytes_of(read, dtype, shape):
  """A reader of a tensor stored as its bytes, ``shape + (itemsize,)`` uint8."""

  def read_bytes(index):
    if index is None:
      raw = read(None)
    else:
      raw = read(full_index(index, shape) + (slice(None),))
    out_shape = raw.shape[:-1]
    return np.ascontiguousarray(raw).view(dtype).reshape(out_shape)

  return read_bytes


def place(read, shape, dtype=None, sharding=None):
  """The array ``read`` gives, cast to ``dtype`` (if given), on ``sharding``.

  Without a sharding the result is a NumPy array; with one, a ``jax.Array``
  whose every device shard is read separately.
  """

  def cast(x):
    x = np.asarray(x)
    return x if dtype is None else x.astype(dtype, copy=False)

  if sharding is None:
    return cast(read(None))
  import jax

  sharding = concrete(sharding)

  def shard(index):
    return cast(read(index))

  return jax.make_array_from_callback(tuple(shape), sharding, shard)


def concrete(sharding):
  """``sharding`` on devices: a ``NamedSharding`` over an abstract mesh (as
  ``nnx.eval_shape`` under ``jax.set_mesh`` gives) takes the current mesh.

  Raises:
    ValueError: if no mesh of that shape is set.
  """
  import jax

  mesh = getattr(sharding, 'mesh', None)
  if not isinstance(mesh, jax.sharding.AbstractMesh):
    return sharding
  current = jax.sharding.get_mesh()
  if (
    current is None or current.empty or current.shape_tuple != mesh.shape_tuple
  ):
    raise ValueError(
      f'The target is sharded over an abstract mesh {mesh.shape_tuple}: '
      f'load inside `with jax.set_mesh(mesh)` for a mesh of that shape, or '
      f'pass shardings= with concrete shardings.'
    )
  return jax.sharding.NamedSharding(current, sharding.spec)
