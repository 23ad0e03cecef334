"""Dropout math.

>>> import jax, jax.numpy as jnp
>>> from flax.layers.stochastic import dropout
>>> y = dropout(jnp.ones(4), 0.5, jax.random.key(0))
>>> sorted(set(y.tolist())) in ([0.0, 2.0], [0.0], [2.0])
True
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax import random


def dropout_mask_shape(shape, broadcast_dims=()) -> list:
  """Mask shape: ``shape`` with the ``broadcast_dims`` set to 1."""
  shape = list(shape)
  for dim in broadcast_dims:
    shape[dim] = 1
  return shape


def explicit_spec(x):
  """The PartitionSpec of ``x`` (one entry per axis) when it is sharded on
  a mesh with Explicit axes (``jax.set_mesh``); None otherwise."""
  sharding = getattr(jax.typeof(x), 'sharding', None)
  mesh = getattr(sharding, 'mesh', None)
  if mesh is None or mesh.empty:
    return None
  if jax.sharding.AxisType.Explicit not in mesh.axis_types:
    return None
  spec = tuple(sharding.spec)
  return spec + (None,) * (x.ndim - len(spec))


def dropout(inputs, rate: float, rng, broadcast_dims=()):
  """Zeroes elements with probability ``rate``, scales the rest.

  Kept elements are divided by ``1 - rate``. ``rate == 1`` gives zeros
  (without NaN gradients); ``rate == 0`` returns the inputs.

  Args:
    inputs: the array.
    rate: drop probability.
    rng: PRNG key.
    broadcast_dims: axes along which the mask is shared.

  Returns:
    The array with dropout applied.
  """
  if rate == 0.0:
    return inputs
  if rate == 1.0:
    return jnp.zeros_like(inputs)
  keep_prob = 1.0 - rate
  shape = dropout_mask_shape(inputs.shape, broadcast_dims)
  spec = explicit_spec(inputs)
  if spec is None:
    mask = random.bernoulli(rng, p=keep_prob, shape=shape)
    mask = jnp.broadcast_to(mask, inputs.shape)
  else:
    # Explicit sharding: the mask is sharded as the inputs (broadcast axes
    # replicated), so that the select sees matching shardings.
    mask_spec = [None if d in broadcast_dims else a for d, a in enumerate(spec)]
    mask = random.bernoulli(
      rng, p=keep_prob, shape=shape, out_sharding=jax.P(*mask_spec)
    )
    mask = jnp.broadcast_to(mask, inputs.shape, out_sharding=jax.P(*spec))
  return lax.select(mask, inputs / keep_prob, jnp.zeros_like(inputs))
