"""Math of the normalization layers.

Statistics are computed in at least float32 (:func:`compute_stats`), then
:func:`normalize` applies ``(x - mean) * rsqrt(var + eps) * scale + bias``.

>>> import jax.numpy as jnp
>>> from flax.layers.normalization import compute_stats, normalize
>>> x = jnp.array([[1.0, 3.0]])
>>> mean, var = compute_stats(x, (1,))
>>> normalize(x, mean, var, (1,), (1,), epsilon=0.0)
Array([[-1.,  1.]], dtype=float32)
"""

import functools
from typing import Any

import jax.numpy as jnp
from jax import lax

from flax.layers.dtypes import canonicalize_dtype

Array = Any


def canonicalize_axes(ndim: int, axes) -> tuple:
  """Returns sorted, unique, non-negative axes (an int is one axis)."""
  if isinstance(axes, int):
    axes = (axes,)
  return _canonicalize_axes(ndim, tuple(axes))


@functools.lru_cache(maxsize=512)
def _canonicalize_axes(ndim, axes):
  return tuple(sorted({ax % ndim if ndim else ax for ax in axes}))


def abs_sq(x):
  """``|x|**2``, real for complex inputs."""
  if jnp.iscomplexobj(x):
    return lax.square(lax.real(x)) + lax.square(lax.imag(x))
  return lax.square(x)


def compute_stats(
  x,
  axes,
  dtype=None,
  axis_name=None,
  axis_index_groups=None,
  use_mean: bool = True,
  use_fast_variance: bool = True,
  mask=None,
  force_float32_reductions: bool = True,
):
  """Mean and (biased) variance of ``x`` over ``axes``.

  Args:
    x: the input.
    axes: int or tuple of axes to reduce.
    dtype: computation dtype (promoted with float32, so half precision
      inputs are reduced in float32); None uses ``x.dtype``.
    axis_name: a mapped axis name to average the statistics over
      (``lax.pmean``).
    axis_index_groups: device groups of ``axis_name``.
    use_mean: when False the mean is zero (RMSNorm) and the variance is
      the mean square.
    use_fast_variance: ``E[x**2] - E[x]**2`` (one pass) instead of
      ``E[(x - E[x])**2]``.
    mask: boolean array, True where elements count.
    force_float32_reductions: reduce in at least float32; when False the
      reductions run in ``dtype`` itself (e.g. bfloat16).

  Returns:
    ``(mean, var)`` with the reduced axes removed.
  """
  if dtype is None:
    dtype = x.dtype
  if force_float32_reductions:
    dtype = jnp.promote_types(dtype, jnp.float32)
  x = jnp.asarray(x, dtype)
  axes = canonicalize_axes(x.ndim, axes)

  def mean(*xs):
    mus = tuple(v.mean(axes, where=mask) for v in xs)
    if axis_name is None:
      return mus
    if len(mus) > 1:
      stacked = lax.pmean(
        jnp.stack(mus, axis=0), axis_name, axis_index_groups=axis_index_groups
      )
      return tuple(stacked[i] for i in range(len(mus)))
    return (lax.pmean(mus[0], axis_name, axis_index_groups=axis_index_groups),)

  if not use_mean:
    (var,) = mean(abs_sq(x))
    return jnp.zeros_like(var), var
  if use_fast_variance:
    mu, mu2 = mean(x, abs_sq(x))
    # Round-off can make this slightly negative.
    var = jnp.maximum(0.0, mu2 - abs_sq(mu))
  else:
    (mu,) = mean(x)
    (var,) = mean(abs_sq(x - jnp.expand_dims(mu, axes)))
  return mu, var


# Layer attributes layer_stats hands to compute_stats under their names.
_LAYER_STAT_FIELDS = (
  'dtype',
  'axis_name',
  'axis_index_groups',
  'use_fast_variance',
)


def layer_stats(layer, x, reduction_axes, mask=None, use_mean: bool = True):
  """:func:`compute_stats` with the options held by a norm layer.

  Args:
    layer: a Linen or NNX norm; its ``dtype``, ``axis_name``,
      ``axis_index_groups`` and ``use_fast_variance`` are used.
    x: the input.
    reduction_axes: the axes to reduce.
    mask: boolean array, True where elements count.
    use_mean: False for RMSNorm (zero mean, mean-square variance).

  Returns:
    ``(mean, var)`` with the reduced axes removed.
  """
  wide = getattr(layer, 'force_float32_reductions', True)
  settings = {k: getattr(layer, k) for k in _LAYER_STAT_FIELDS}
  return compute_stats(
    x,
    reduction_axes,
    use_mean=use_mean,
    mask=mask,
    force_float32_reductions=wide,
    **settings,
  )


def batch_norm_axes(ndim: int, axis) -> tuple:
  """``(feature_axes, reduction_axes)`` of BatchNorm: it reduces every axis
  but ``axis``."""
  feature_axes = canonicalize_axes(ndim, axis)
  return feature_axes, tuple(i for i in range(ndim) if i not in feature_axes)


def instance_norm_axes(ndim: int, feature_axes) -> tuple:
  """``(feature_axes, reduction_axes)`` of InstanceNorm: it reduces every
  axis but the batch axis 0 and ``feature_axes``.

  Raises:
    ValueError: if ``feature_axes`` include axis 0.
  """
  feature_axes = canonicalize_axes(ndim, feature_axes)
  if 0 in feature_axes:
    raise ValueError(
      'The channel axes cannot include the leading dimension '
      'as this is assumed to be the batch axis.'
    )
  return feature_axes, tuple(i for i in range(1, ndim) if i not in feature_axes)


@functools.lru_cache(maxsize=512)
def feature_shapes(shape: tuple, feature_axes) -> tuple:
  """``(param_shape, broadcast_shape)`` of scale/bias over feature axes."""
  axes = canonicalize_axes(len(shape), feature_axes)
  param_shape = tuple(shape[ax] for ax in axes)
  broadcast = tuple(shape[i] if i in axes else 1 for i in range(len(shape)))
  return param_shape, broadcast


def normalize(
  x,
  mean,
  var,
  reduction_axes,
  feature_axes,
  scale=None,
  bias=None,
  *,
  dtype=None,
  epsilon: float = 1e-6,
):
  """Normalizes ``x`` with given statistics, then scales and shifts.

  Args:
    x: the input.
    mean: mean with ``reduction_axes`` removed.
    var: variance with ``reduction_axes`` removed.
    reduction_axes: the axes the statistics were reduced over.
    feature_axes: the axes ``scale`` and ``bias`` cover.
    scale: ``[x.shape[a] for a in feature_axes]`` or None.
    bias: same shape as ``scale``, or None.
    dtype: output dtype; None promotes ``x``, ``scale`` and ``bias``.
    epsilon: added to the variance.

  Returns:
    The normalized array.
  """
  axes = canonicalize_axes(x.ndim, reduction_axes)
  _, feature_layout = feature_shapes(
    tuple(x.shape), canonicalize_axes(x.ndim, feature_axes)
  )

  def per_feature(p):
    return jnp.reshape(p, feature_layout)

  # One factor per position of the statistics: 1/sqrt(var + eps), with
  # the learned scale folded in before it meets the centred input.
  factor = lax.rsqrt(jnp.expand_dims(var, axes) + epsilon)
  if scale is not None:
    factor = factor * per_feature(scale)
  out = (x - jnp.expand_dims(mean, axes)) * factor
  if bias is not None:
    out = out + per_feature(bias)
  return jnp.asarray(out, canonicalize_dtype(x, scale, bias, dtype=dtype))


def group_norm_groups(channels: int, num_groups, group_size) -> int:
  """Checks GroupNorm's ``num_groups`` / ``group_size`` and returns groups."""
  if (num_groups is None) == (group_size is None):
    raise ValueError(
      'Either `num_groups` or `group_size` must be given, and only one of '
      'them: `num_groups` defaults to 32, so pass `num_groups=None` along '
      'with a `group_size`.'
    )
  if num_groups is None:
    num_groups, leftover = divmod(channels, group_size)
    if leftover:
      raise ValueError(
        f'GroupNorm cannot split {channels} channels evenly: {channels} is '
        f'not multiple of the group size {group_size}.'
      )
  if num_groups <= 0 or channels % num_groups != 0:
    raise ValueError(
      f'Number of groups ({num_groups}) does not divide the number of '
      f'channels ({channels}).'
    )
  return num_groups


def group_stats(
  x,
  num_groups: int,
  reduction_axes=None,
  dtype=None,
  axis_name=None,
  axis_index_groups=None,
  use_fast_variance=True,
  mask=None,
  force_float32_reductions=True,
):
  """GroupNorm statistics, repeated back to one value per channel.

  Args:
    x: ``(batch, ..., channels)``.
    num_groups: number of channel groups.
    reduction_axes: axes to reduce (must include the last one); default:
      every axis but the first.
    dtype, axis_name, axis_index_groups, use_fast_variance, mask,
      force_float32_reductions: see :func:`compute_stats`.

  Returns:
    ``(mean, var, reduction_axes)``: statistics shaped like ``x`` with the
    non-feature reduction axes removed, and those axes.
  """
  if reduction_axes is None:
    reduction_axes = tuple(range(1, x.ndim - 1)) + (x.ndim - 1,)
  reduction_axes = canonicalize_axes(x.ndim, reduction_axes)
  if reduction_axes[-1] != x.ndim - 1:
    raise ValueError(
      'The reduction axes must include the final dimension '
      'as this is assumed to be the feature axis.'
    )
  channels = x.shape[-1]
  group_size = channels // num_groups
  group_shape = x.shape[:-1] + (num_groups, group_size)
  if mask is not None:
    mask = mask.reshape(mask.shape[:-1] + (num_groups, group_size))
  mean, var = compute_stats(
    x.reshape(group_shape),
    reduction_axes[:-1] + (x.ndim,),
    dtype,
    axis_name,
    axis_index_groups,
    use_fast_variance=use_fast_variance,
    mask=mask,
    force_float32_reductions=force_float32_reductions,
  )
  mean = jnp.repeat(mean, group_size, axis=-1)
  var = jnp.repeat(var, group_size, axis=-1)
  return mean, var, reduction_axes[:-1]


def l2_normalize(x, axis=None, eps=1e-12):
  """``x / ||x||`` with ``eps`` guarding against zero norms."""
  return x * lax.rsqrt((x * x).sum(axis=axis, keepdims=True) + eps)


def power_iteration(matrix, u, n_steps: int, eps: float):
  """Estimates the largest singular value of a 2-D ``matrix``.

  Args:
    matrix: ``(m, n)``.
    u: the ``(1, n)`` starting vector (the previous call's result).
    n_steps: iterations (at least one).
    eps: guards the normalizations against zero norms.

  Returns:
    ``(u, v, sigma)``: the new right and left vectors (gradients stopped)
    and the estimate ``v @ matrix @ u.T``.
  """
  for _ in range(n_steps):
    v = l2_normalize(jnp.matmul(u, matrix.T), eps=eps)
    u = l2_normalize(jnp.matmul(v, matrix), eps=eps)
  u, v = lax.stop_gradient(u), lax.stop_gradient(v)
  return u, v, jnp.matmul(jnp.matmul(v, matrix), u.T)[0, 0]


def divide_by_sigma(matrix, sigma):
  """``matrix / sigma``, left as it is where ``sigma`` is zero."""
  return matrix / jnp.where(sigma != 0, sigma, 1)
