"""Small helpers for data-parallel training loops.

>>> import jax.numpy as jnp
>>> from flax.training import common_utils
>>> common_utils.onehot(jnp.array([0, 2]), 3)
Array([[1., 0., 0.],
       [0., 0., 1.]], dtype=float32)
"""

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ['get_metrics', 'onehot', 'shard', 'shard_prng_key', 'stack_forest']


def shard(xs):
  """Reshapes each leaf to ``(local_device_count, -1, *rest)`` for pmap."""
  n = jax.local_device_count()
  return jax.tree.map(lambda x: x.reshape((n, -1) + x.shape[1:]), xs)


def shard_prng_key(prng_key):
  """Splits a key into one key per local device."""
  return jax.random.split(prng_key, num=jax.local_device_count())


def stack_forest(forest):
  """Stacks a list of trees of the same structure leaf by leaf (into JAX
  arrays, on the default device)."""
  return jax.tree.map(lambda *xs: jnp.stack(xs), *forest)


def get_metrics(device_metrics):
  """Takes replica 0 of every leaf, moves it to the host and stacks.

  Args:
    device_metrics: a list of replicated metric trees (one per step).

  Returns:
    One tree whose leaves are arrays with a leading step axis.
  """
  # A leaf without a replica axis is a ValueError ("axis 0 is out of bounds").
  first = jax.tree.map(lambda x: jnp.take(x, 0, axis=0), device_metrics)
  return stack_forest(jax.device_get(first))


def onehot(labels, num_classes, on_value=1.0, off_value=0.0):
  """One-hot encodes integer ``labels`` along a new last axis (float32)."""
  labels = jnp.asarray(labels)
  hit = labels[..., None] == jnp.arange(num_classes).reshape(
    (1,) * labels.ndim + (-1,)
  )
  x = lax.select(
    hit, jnp.full(hit.shape, on_value), jnp.full(hit.shape, off_value)
  )
  return x.astype(jnp.float32)
