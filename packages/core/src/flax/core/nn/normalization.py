"""Functional normalization layers: batch_norm, layer_norm, group_norm."""

from collections.abc import Callable, Sequence
from typing import Optional, Union

import jax
import jax.numpy as jnp
from jax import lax

from flax.core.scope import Scope


def _axes(axis, ndim):
  axis = (axis,) if isinstance(axis, int) else tuple(axis)
  return tuple(a % ndim for a in axis)


def _affine(
  scope, y, feature_shape, dtype, bias, scale, bias_init, scale_init, bshape
):
  """Applies ``scale``/``bias`` params, reshaped to ``bshape`` explicitly."""
  if scale:
    s = scope.param('scale', scale_init, feature_shape)
    y = y * jnp.reshape(jnp.asarray(s, dtype), bshape)
  if bias:
    b = scope.param('bias', bias_init, feature_shape)
    y = y + jnp.reshape(jnp.asarray(b, dtype), bshape)
  return y


def _last_axis_shape(x):
  return (1,) * (x.ndim - 1) + (x.shape[-1],)


def batch_norm(
  scope: Scope,
  x,
  use_running_average: bool = False,
  axis: Union[int, Sequence[int]] = -1,
  momentum: float = 0.99,
  epsilon: float = 1e-5,
  dtype=jnp.float32,
  bias: bool = True,
  scale: bool = True,
  bias_init: Callable = jax.nn.initializers.zeros,
  scale_init: Callable = jax.nn.initializers.ones,
  axis_name: Optional[str] = None,
  axis_index_groups=None,
  kind: str = 'batch_stats',
):
  """Batch normalization over all axes except ``axis``.

  Running statistics live in collection ``kind`` as ``mean`` and ``var``;
  they are updated (``momentum``) when the collection is mutable and not
  initializing.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, nn
  >>> y, v = init(nn.batch_norm)(jax.random.key(0), jnp.ones((4, 3)))
  >>> sorted(v), v['batch_stats']['mean'].shape
  (['batch_stats', 'params'], (3,))
  """
  x = jnp.asarray(x, jnp.float32)
  axes = _axes(axis, x.ndim)
  reduction = tuple(i for i in range(x.ndim) if i not in axes)
  feature_shape = tuple(x.shape[a] for a in axes)
  stats_shape = tuple(x.shape[i] if i in axes else 1 for i in range(x.ndim))
  ra_mean = scope.variable(kind, 'mean', jnp.zeros, feature_shape)
  ra_var = scope.variable(kind, 'var', jnp.ones, feature_shape)
  if use_running_average:
    mean, var = ra_mean.value, ra_var.value
  else:
    mean = jnp.mean(x, reduction)
    mean2 = jnp.mean(lax.square(x), reduction)
    if axis_name is not None and not scope.get_flag('initializing', False):
      mean, mean2 = lax.pmean(
        (mean, mean2), axis_name, axis_index_groups=axis_index_groups
      )
    var = jnp.maximum(0.0, mean2 - lax.square(mean))
    if ra_mean.is_mutable() and not scope.get_flag('initializing', False):
      ra_mean.value = momentum * ra_mean.value + (1 - momentum) * mean
      ra_var.value = momentum * ra_var.value + (1 - momentum) * var
  y = (x - mean.reshape(stats_shape)) * lax.rsqrt(
    var.reshape(stats_shape) + epsilon
  )
  y = _affine(
    scope,
    y,
    feature_shape,
    dtype,
    bias,
    scale,
    bias_init,
    scale_init,
    stats_shape,
  )
  return jnp.asarray(y, dtype)


def layer_norm(
  scope: Scope,
  x,
  epsilon: float = 1e-6,
  dtype=jnp.float32,
  bias: bool = True,
  scale: bool = True,
  bias_init: Callable = jax.nn.initializers.zeros,
  scale_init: Callable = jax.nn.initializers.ones,
):
  """Layer normalization over the last axis; params ``scale``, ``bias``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, nn
  >>> y, v = init(nn.layer_norm)(jax.random.key(0), jnp.arange(4.0))
  >>> round(float(y.mean()), 6), v['params']['scale'].shape
  (0.0, (4,))
  """
  x = jnp.asarray(x, jnp.float32)
  mean = jnp.mean(x, axis=-1, keepdims=True)
  var = jnp.mean(lax.square(x - mean), axis=-1, keepdims=True)
  y = (x - mean) * lax.rsqrt(var + epsilon)
  y = _affine(
    scope,
    y,
    (x.shape[-1],),
    dtype,
    bias,
    scale,
    bias_init,
    scale_init,
    _last_axis_shape(x),
  )
  return jnp.asarray(y, dtype)


def group_norm(
  scope: Scope,
  x,
  num_groups: Optional[int] = 32,
  group_size: Optional[int] = None,
  epsilon: float = 1e-6,
  dtype=jnp.float32,
  bias: bool = True,
  scale: bool = True,
  bias_init: Callable = jax.nn.initializers.zeros,
  scale_init: Callable = jax.nn.initializers.ones,
):
  """Group normalization: channels (last axis) split into groups.

  Give either ``num_groups`` or ``group_size`` (channels per group).
  Statistics are taken per example over the spatial axes and the channels
  of each group.

  Raises:
    ValueError: if both or neither of ``num_groups`` and ``group_size`` are
      given, or they do not divide the channels.
  """
  x = jnp.asarray(x, jnp.float32)
  channels = x.shape[-1]
  if (num_groups is None) == (group_size is None):
    raise ValueError(
      'Either `num_groups` or `group_size` should be specified, but not '
      'both of them.'
    )
  if group_size is not None:
    if channels % group_size:
      raise ValueError(
        f'Number of channels ({channels}) is not multiple of the group '
        f'size ({group_size}).'
      )
    num_groups = channels // group_size
  if channels % num_groups:
    raise ValueError(
      f'Number of groups ({num_groups}) does not divide the number of '
      f'channels ({channels}).'
    )
  grouped = x.reshape(x.shape[:-1] + (num_groups, channels // num_groups))
  axes = tuple(range(1, x.ndim - 1)) + (x.ndim,)
  mean = jnp.mean(grouped, axis=axes, keepdims=True)
  var = jnp.mean(lax.square(grouped - mean), axis=axes, keepdims=True)
  y = ((grouped - mean) * lax.rsqrt(var + epsilon)).reshape(x.shape)
  # As in Flax 0.12.8, the params keep the input's rank: (1, ..., 1, C).
  y = _affine(
    scope,
    y,
    _last_axis_shape(x),
    dtype,
    bias,
    scale,
    bias_init,
    scale_init,
    _last_axis_shape(x),
  )
  return jnp.asarray(y, dtype)
