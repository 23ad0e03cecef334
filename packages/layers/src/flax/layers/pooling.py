"""Pooling functions (no parameters).

Inputs are ``(batch..., window dims..., features)``; the batch axes are
optional.

>>> import jax.numpy as jnp
>>> from flax.layers.pooling import avg_pool
>>> avg_pool(jnp.arange(4.0).reshape(1, 4, 1), (2,), strides=(2,))[0, :, 0]
Array([0.5, 2.5], dtype=float32)
"""

import functools

import jax.numpy as jnp
import numpy as np
from jax import lax


@functools.lru_cache(maxsize=512)
def _pool_config(ndim, window_shape, strides, padding):
  n_window = len(window_shape)
  n_batch = ndim - (n_window + 1)
  if strides is None:
    strides = (1,) * n_window
  assert len(window_shape) == len(strides), (
    f'len({window_shape}) must equal len({strides})'
  )
  single = n_batch == 0
  if single:
    n_batch = 1
  dims = (1,) * n_batch + window_shape + (1,)
  strides = (1,) * n_batch + strides + (1,)
  if not isinstance(padding, str):
    assert len(padding) == n_window, (
      f'padding {padding} must specify pads for same number of dims as '
      f'window_shape {window_shape}'
    )
    assert all(len(p) == 2 for p in padding), (
      f'each entry in padding {padding} must be length 2'
    )
    padding = ((0, 0),) * n_batch + padding + ((0, 0),)
  return dims, strides, padding, single


def pool(inputs, init, reduce_fn, window_shape, strides, padding):
  """Generic pooling with ``lax.reduce_window``.

  Args:
    inputs: ``(batch..., window dims..., features)``.
    init: initial value of the reduction (e.g. ``0.`` for sums).
    reduce_fn: binary reduction, e.g. ``lax.add``.
    window_shape: window size per window dimension.
    strides: strides per window dimension (None means 1).
    padding: ``'SAME'``, ``'VALID'`` or a sequence of ``(low, high)``
      pairs, one per window dimension.

  Returns:
    The pooled array.
  """
  window_shape = tuple(window_shape)
  strides = None if strides is None else tuple(strides)
  if not isinstance(padding, str):
    padding = tuple(tuple(p) for p in padding)
  dims, strides, padding, single = _pool_config(
    inputs.ndim, window_shape, strides, padding
  )
  # An input without batch axes gets one for the reduction only.
  x = inputs[None] if single else inputs
  assert x.ndim == len(dims), f'len({x.shape}) != len({dims})'
  y = lax.reduce_window(x, init, reduce_fn, dims, strides, padding)
  return jnp.squeeze(y, axis=0) if single else y


def avg_pool(
  inputs, window_shape, strides=None, padding='VALID', count_include_pad=True
):
  """Average pooling.

  Args:
    inputs: ``(batch..., window dims..., features)``.
    window_shape: window size per window dimension.
    strides: strides (None means 1).
    padding: see :func:`pool`.
    count_include_pad: divide by the full window size (padding counts as
      zeros) when True, else by the number of real elements.

  Returns:
    The pooled array.
  """
  y = pool(inputs, 0.0, lax.add, window_shape, strides, padding)
  if count_include_pad:
    return y / np.prod(window_shape)
  div_shape = inputs.shape[:-1] + (1,)
  if len(div_shape) - 2 == len(window_shape):
    div_shape = (1,) + div_shape[1:]
  return y / pool(
    jnp.ones(div_shape, y.dtype), 0.0, lax.add, window_shape, strides, padding
  )


def _extreme(dtype, largest):
  if jnp.issubdtype(dtype, jnp.inexact):
    return jnp.inf if largest else -jnp.inf
  if jnp.issubdtype(dtype, jnp.bool_):
    return largest
  info = jnp.iinfo(dtype)
  return info.max if largest else info.min


def max_pool(inputs, window_shape, strides=None, padding='VALID'):
  """Max pooling; see :func:`pool` for the arguments."""
  init = _extreme(inputs.dtype, largest=False)
  return pool(inputs, init, lax.max, window_shape, strides, padding)


def min_pool(inputs, window_shape, strides=None, padding='VALID'):
  """Min pooling; see :func:`pool` for the arguments."""
  init = _extreme(inputs.dtype, largest=True)
  return pool(inputs, init, lax.min, window_shape, strides, padding)
