"""Pooling over the spatial axes of channels-last inputs."""

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
from jax import lax


def pool(
  inputs,
  init,
  reduce_fn: Callable,
  window_shape: Sequence[int],
  strides: Sequence[int] | None,
  padding: Any,
):
  """Reduces windows of ``inputs`` (``(batch..., spatial..., features)``).

  Args:
    inputs: the input; without a batch axis one is added and removed.
    init: the initial value of the reduction.
    reduce_fn: a binary reduction (``lax.add``, ``lax.max``, ...).
    window_shape: the window size per spatial axis.
    strides: the stride per spatial axis (default 1).
    padding: ``'SAME'``, ``'VALID'`` or ``(low, high)`` per spatial axis.

  Returns:
    The reduced array.
  """
  window_shape = tuple(window_shape)
  n = len(window_shape)
  strides = tuple(strides) if strides is not None else (1,) * n
  if len(strides) != n:
    raise ValueError(
      f'len({window_shape}) must equal len({strides}) (one stride per '
      'spatial axis).'
    )
  num_batch_dims = inputs.ndim - (n + 1)
  if num_batch_dims < 0:
    raise ValueError(
      f'Pooling a {inputs.ndim}-d input with a {n}-d window needs at least '
      f'{n + 1} axes (spatial axes and features).'
    )
  batch_shape = inputs.shape[:num_batch_dims]
  x = jnp.reshape(inputs, (-1,) + inputs.shape[num_batch_dims:])
  dims = (1,) + window_shape + (1,)
  all_strides = (1,) + strides + (1,)
  if not isinstance(padding, str):
    padding = tuple(tuple(p) for p in padding)
    if len(padding) != n:
      raise ValueError(
        f'padding {padding} must give (low, high) for each of the {n} '
        'spatial axes.'
      )
    padding = ((0, 0),) + padding + ((0, 0),)
  y = lax.reduce_window(x, init, reduce_fn, dims, all_strides, padding)
  return jnp.reshape(y, batch_shape + y.shape[1:])


def avg_pool(
  inputs, window_shape, strides=None, padding='VALID', count_include_pad=True
):
  """Average pooling.

  >>> import jax.numpy as jnp
  >>> from flax.core import nn
  >>> nn.avg_pool(jnp.arange(8.0).reshape(1, 4, 2), (2,), strides=(2,))[0]
  Array([[1., 2.],
         [5., 6.]], dtype=float32)

  Args:
    inputs: ``(batch..., spatial..., features)``.
    window_shape: the window size per spatial axis.
    strides: the stride per spatial axis (default 1).
    padding: ``'SAME'``, ``'VALID'`` or ``(low, high)`` pairs.
    count_include_pad: divide by the full window size, padding included;
      otherwise by the number of real elements in each window.
  """
  y = pool(inputs, 0.0, lax.add, window_shape, strides, padding)
  if count_include_pad:
    return y / math.prod(window_shape)
  ones = jnp.ones(inputs.shape[:-1] + (1,), inputs.dtype)
  counts = pool(ones, 0.0, lax.add, window_shape, strides, padding)
  return y / counts


def max_pool(inputs, window_shape, strides=None, padding='VALID'):
  """Max pooling; arguments as for :func:`avg_pool`."""
  return pool(inputs, -jnp.inf, lax.max, window_shape, strides, padding)
