"""Normalization NNX layers: Batch, Layer, RMS, Group and Instance norm."""

from __future__ import annotations

import typing as tp
from types import MappingProxyType

import jax
import jax.numpy as jnp

from flax import nnx
from flax.layers import normalization as _math
from flax.layers.nnx import dtypes
from flax.layers.nnx import initializers
from flax.layers.nnx._utils import first_from
from flax.layers.nnx._utils import keep_args
from flax.layers.nnx._utils import optional_data

Array = jax.Array
Axes = int | tp.Sequence[int]

_EMPTY = MappingProxyType({})
_zeros = initializers.zeros_init()
_ones = initializers.ones_init()


def _init_norm(module, args):
  """Creates ``scale`` then ``bias`` (keys drawn in that order, as Flax does)
  for the ``use_scale`` / ``use_bias`` the norm has, then keeps the other
  constructor arguments (``args``: its ``locals()``) as attributes."""
  shape = (args['num_features'],)
  for name in ('scale', 'bias'):
    if f'use_{name}' not in args:
      continue
    if args[f'use_{name}']:
      init = args[f'{name}_init']
      value = nnx.Param(
        init(args['rngs'].params(), shape, args['param_dtype']),
        **args[f'{name}_metadata'],
      )
    else:
      value = optional_data(None)
    setattr(module, name, value)
  keep_args(module, args)


def _normalize(module, x, mean, var, reduction_axes, feature_axes, bias=True):
  """Normalizes with the module's ``scale`` and (unless ``bias`` is False)
  ``bias``."""
  scale = module.scale.value if module.scale is not None else None
  bias = module.bias.value if bias and module.bias is not None else None
  return _math.normalize(
    x,
    mean,
    var,
    reduction_axes,
    feature_axes,
    scale,
    bias,
    dtype=module.dtype,
    epsilon=module.epsilon,
  )


class BatchNorm(nnx.Module):
  """Batch normalization with running statistics.

  Params ``scale`` and ``bias`` (``(num_features,)``); ``nnx.BatchStat``
  ``mean`` (zeros) and ``var`` (ones), float32. While training
  (``use_running_average=False``) the batch statistics normalize the input
  and update the running ones as ``ra = momentum * ra + (1 - momentum) *
  batch``; otherwise the running statistics are used.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.BatchNorm(3, rngs=nnx.Rngs(0))
  >>> y = layer(jnp.arange(6.0).reshape(2, 3))
  >>> layer.mean.value
  Array([0.015, 0.025, 0.035], dtype=float32)

  Args:
    num_features: number of features (size of ``axis``).
    use_running_average: normalize with the running statistics.
    axis: the feature axis.
    momentum: decay of the running averages.
    epsilon: added to the variance.
    dtype: dtype of the output (statistics use at least float32).
    param_dtype: dtype passed to the initializers.
    use_bias: whether to add ``bias``.
    use_scale: whether to multiply by ``scale``.
    bias_init: initializer of ``bias``.
    scale_init: initializer of ``scale``.
    axis_name: mapped axis to average batch statistics over (e.g. under
      ``vmap`` or ``shard_map``).
    axis_index_groups: device groups of ``axis_name``.
    use_fast_variance: compute the variance as ``E[x^2] - E[x]^2``.
    promote_dtype: dtype promotion function (unused by the statistics).
    rngs: rng key container.
    bias_metadata: extra metadata of ``bias``.
    scale_metadata: extra metadata of ``scale``.
  """

  def __init__(
    self,
    num_features: int,
    *,
    use_running_average: bool = False,
    axis: int = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-5,
    dtype=None,
    param_dtype=jnp.float32,
    use_bias: bool = True,
    use_scale: bool = True,
    bias_init=_zeros,
    scale_init=_ones,
    axis_name: str | None = None,
    axis_index_groups: tp.Any = None,
    use_fast_variance: bool = True,
    promote_dtype=dtypes.promote_dtype,
    rngs: nnx.Rngs,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    scale_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    self.mean = nnx.BatchStat(jnp.zeros((num_features,), jnp.float32))
    self.var = nnx.BatchStat(jnp.ones((num_features,), jnp.float32))
    _init_norm(self, locals())

  def set_view(self, use_running_average: bool | None = None):
    """Class method used by ``nnx.view``.

    Args:
      use_running_average: if True, the stored batch statistics will be
        used instead of computing the batch statistics on the input.
    """
    if use_running_average is not None:
      self.use_running_average = use_running_average

  def __call__(
    self,
    x: Array,
    use_running_average: bool | None = None,
    *,
    mask: Array | None = None,
  ) -> Array:
    """Normalizes ``x``.

    Args:
      x: the input.
      use_running_average: overrides the attribute of the same name.
      mask: boolean array, True where elements count in the statistics.

    Returns:
      The normalized input.
    """
    use_running_average = first_from(
      use_running_average,
      self.use_running_average,
      error_msg='No `use_running_average` argument was provided to '
      'BatchNorm as either a __call__ argument, class attribute, or '
      'nnx.flag.',
    )
    feature_axes, reduction_axes = _math.batch_norm_axes(x.ndim, self.axis)
    if use_running_average:
      mean, var = self.mean.value, self.var.value
    else:
      mean, var = _math.compute_stats(
        x,
        reduction_axes,
        dtype=self.dtype,
        axis_name=self.axis_name,
        axis_index_groups=self.axis_index_groups,
        use_fast_variance=self.use_fast_variance,
        mask=mask,
      )
      m = self.momentum
      self.mean.value = m * self.mean.value + (1 - m) * mean
      self.var.value = m * self.var.value + (1 - m) * var
    return _normalize(self, x, mean, var, reduction_axes, feature_axes)


class LayerNorm(nnx.Module):
  """Layer normalization: per-example statistics over ``reduction_axes``.

  Params ``scale`` and ``bias`` of shape ``(num_features,)``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.LayerNorm(2, rngs=nnx.Rngs(0))
  >>> layer(jnp.array([[1.0, 3.0]]))
  Array([[-0.9999995,  0.9999995]], dtype=float32)

  Args:
    num_features: size of the feature axes.
    epsilon: added to the variance.
    dtype: dtype of the output.
    param_dtype: dtype passed to the initializers.
    use_bias: whether to add ``bias``.
    use_scale: whether to multiply by ``scale``.
    bias_init: initializer of ``bias``.
    scale_init: initializer of ``scale``.
    reduction_axes: axes of the statistics.
    feature_axes: axes of ``scale`` and ``bias``.
    axis_name: mapped axis to average the statistics over.
    axis_index_groups: device groups of ``axis_name``.
    use_fast_variance: compute the variance as ``E[x^2] - E[x]^2``.
    promote_dtype: dtype promotion function.
    rngs: rng key container.
    bias_metadata: extra metadata of ``bias``.
    scale_metadata: extra metadata of ``scale``.
  """

  def __init__(
    self,
    num_features: int,
    *,
    epsilon: float = 1e-6,
    dtype=None,
    param_dtype=jnp.float32,
    use_bias: bool = True,
    use_scale: bool = True,
    bias_init=_zeros,
    scale_init=_ones,
    reduction_axes: Axes = -1,
    feature_axes: Axes = -1,
    axis_name: str | None = None,
    axis_index_groups: tp.Any = None,
    use_fast_variance: bool = True,
    promote_dtype=dtypes.promote_dtype,
    rngs: nnx.Rngs,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    scale_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    _init_norm(self, locals())

  def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
    """Normalizes ``x`` (``mask``: True where elements count)."""
    mean, var = _math.layer_stats(self, x, self.reduction_axes, mask)
    return _normalize(
      self, x, mean, var, self.reduction_axes, self.feature_axes
    )


class RMSNorm(nnx.Module):
  """Root-mean-square normalization (no mean subtraction, no bias).

  Param ``scale`` of shape ``(num_features,)``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.RMSNorm(2, rngs=nnx.Rngs(0))
  >>> layer(jnp.array([[3.0, 4.0]])).shape
  (1, 2)

  Args:
    num_features: size of the feature axes.
    epsilon: added to the mean square.
    dtype: dtype of the output.
    param_dtype: dtype passed to the initializer.
    use_scale: whether to multiply by ``scale``.
    scale_init: initializer of ``scale``.
    reduction_axes: axes of the statistics.
    feature_axes: axes of ``scale``.
    axis_name: mapped axis to average the statistics over.
    axis_index_groups: device groups of ``axis_name``.
    use_fast_variance: accepted for uniformity.
    promote_dtype: dtype promotion function.
    rngs: rng key container.
    scale_metadata: extra metadata of ``scale``.
  """

  def __init__(
    self,
    num_features: int,
    *,
    epsilon: float = 1e-6,
    dtype=None,
    param_dtype=jnp.float32,
    use_scale: bool = True,
    scale_init=_ones,
    reduction_axes: Axes = -1,
    feature_axes: Axes = -1,
    axis_name: str | None = None,
    axis_index_groups: tp.Any = None,
    use_fast_variance: bool = True,
    promote_dtype=dtypes.promote_dtype,
    rngs: nnx.Rngs,
    scale_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    _init_norm(self, locals())

  def __call__(self, x: Array, mask: Array | None = None) -> Array:
    """Normalizes ``x`` by its root mean square."""
    mean, var = _math.layer_stats(
      self, x, self.reduction_axes, mask, use_mean=False
    )
    return _normalize(
      self, x, mean, var, self.reduction_axes, self.feature_axes, bias=False
    )


class GroupNorm(nnx.Module):
  """Group normalization: statistics per example and group of channels.

  Inputs are ``(batch, ..., channels)``; params ``scale`` and ``bias`` have
  shape ``(num_features,)``. Give exactly one of ``num_groups`` and
  ``group_size``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.GroupNorm(6, num_groups=3, rngs=nnx.Rngs(0))
  >>> layer(jnp.ones((2, 4, 6))).shape
  (2, 4, 6)

  Args:
    num_features: number of channels.
    num_groups: number of groups (default 32).
    group_size: channels per group (set ``num_groups=None`` to use it).
    epsilon: added to the variance.
    dtype: dtype of the output.
    param_dtype: dtype passed to the initializers.
    use_bias: whether to add ``bias``.
    use_scale: whether to multiply by ``scale``.
    bias_init: initializer of ``bias``.
    scale_init: initializer of ``scale``.
    reduction_axes: axes of the statistics (default: all but the first).
    axis_name: mapped axis to average the statistics over.
    axis_index_groups: device groups of ``axis_name``.
    use_fast_variance: compute the variance as ``E[x^2] - E[x]^2``.
    promote_dtype: dtype promotion function.
    rngs: rng key container.
    bias_metadata: extra metadata of ``bias``.
    scale_metadata: extra metadata of ``scale``.
  """

  def __init__(
    self,
    num_features: int,
    num_groups: int | None = 32,
    group_size: int | None = None,
    *,
    epsilon: float = 1e-6,
    dtype=None,
    param_dtype=jnp.float32,
    use_bias: bool = True,
    use_scale: bool = True,
    bias_init=_zeros,
    scale_init=_ones,
    reduction_axes: Axes | None = None,
    axis_name: str | None = None,
    axis_index_groups: tp.Any = None,
    use_fast_variance: bool = True,
    promote_dtype=dtypes.promote_dtype,
    rngs: nnx.Rngs,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    scale_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    self.num_groups = _math.group_norm_groups(
      num_features, num_groups, group_size
    )
    self.group_size = num_features // self.num_groups
    _init_norm(self, locals())

  def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
    """Normalizes ``x`` per group of channels."""
    mean, var, reduction_axes = _math.group_stats(
      x,
      self.num_groups,
      self.reduction_axes,
      self.dtype,
      self.axis_name,
      self.axis_index_groups,
      use_fast_variance=self.use_fast_variance,
      mask=mask,
    )
    return _normalize(self, x, mean, var, reduction_axes, (x.ndim - 1,))


class InstanceNorm(nnx.Module):
  """Instance normalization: per example and channel, over spatial axes.

  Statistics reduce every axis except the first (batch) and
  ``feature_axes``; params ``scale`` and ``bias`` have shape
  ``(num_features,)``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.InstanceNorm(3, rngs=nnx.Rngs(0))
  >>> layer(jnp.ones((2, 5, 3))).shape
  (2, 5, 3)

  Args:
    num_features: number of channels.
    epsilon: added to the variance.
    dtype: dtype of the output.
    param_dtype: dtype passed to the initializers.
    use_bias: whether to add ``bias``.
    use_scale: whether to multiply by ``scale``.
    bias_init: initializer of ``bias``.
    scale_init: initializer of ``scale``.
    feature_axes: the channel axes.
    axis_name: mapped axis to average the statistics over.
    axis_index_groups: device groups of ``axis_name``.
    use_fast_variance: compute the variance as ``E[x^2] - E[x]^2``.
    promote_dtype: dtype promotion function.
    rngs: rng key container.
    bias_metadata: extra metadata of ``bias``.
    scale_metadata: extra metadata of ``scale``.
  """

  def __init__(
    self,
    num_features: int,
    *,
    epsilon: float = 1e-6,
    dtype=None,
    param_dtype=jnp.float32,
    use_bias: bool = True,
    use_scale: bool = True,
    bias_init=_zeros,
    scale_init=_ones,
    feature_axes: Axes = -1,
    axis_name: str | None = None,
    axis_index_groups: tp.Any = None,
    use_fast_variance: bool = True,
    promote_dtype=dtypes.promote_dtype,
    rngs: nnx.Rngs,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    scale_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    _init_norm(self, locals())

  def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
    """Normalizes ``x`` per example and channel."""
    feature_axes, reduction_axes = _math.instance_norm_axes(
      x.ndim, self.feature_axes
    )
    mean, var = _math.layer_stats(self, x, reduction_axes, mask)
    return _normalize(self, x, mean, var, reduction_axes, feature_axes)
