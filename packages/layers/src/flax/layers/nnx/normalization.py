"""Normalization NNX layers: Batch, Layer, RMS, Group and Instance norm."""

from __future__ import annotations

import typing as tp
from types import MappingProxyType

import jax
import jax.numpy as jnp

from flax import nnx
from flax.nnx import Module as Module
from flax.typing import PromoteDtypeFn as PromoteDtypeFn
from flax.layers import normalization as _math
from flax.layers.nnx import dtypes
from flax.layers.nnx import initializers
from flax.layers.nnx._utils import first_from
from flax.layers.nnx._utils import keep_args
from flax.layers.nnx._utils import optional_data
from flax.layers.nnx._utils import param_key

Array = jax.Array
_MaybeFlag = bool | None

# Norm attributes handed as they are to the statistics helpers.
_STAT_OPTIONS = ('dtype', 'axis_name', 'axis_index_groups', 'use_fast_variance')
Axes = int | tp.Sequence[int]

_EMPTY = MappingProxyType({})
_zeros = initializers.zeros_init()
_ones = initializers.ones_init()


def _init_norm(module, args, skip=()):
  """Creates ``scale`` then ``bias`` (keys drawn in that order, as Flax does)
  for the ``use_scale`` / ``use_bias`` the norm has, then keeps the other
  constructor arguments (``args``: its ``locals()``) as attributes, except
  those in ``skip``."""
  shape = (args['num_features'],)
  for name in ('scale', 'bias'):
    if f'use_{name}' not in args:
      continue
    if args[f'use_{name}']:
      init = args[f'{name}_init']
      value = nnx.Param(
        init(param_key(args['rngs'], init), shape, args['param_dtype']),
        **args[f'{name}_metadata'],
      )
    else:
      value = optional_data(None)
    setattr(module, name, value)
  keep_args(module, args, skip)


def _norm_output(module, x, mean, var, reduction_axes, feature_axes, bias=True):
  """Normalizes with the module's ``scale`` and (unless ``bias`` is False)
  ``bias``."""
  scale = module.scale[...] if module.scale is not None else None
  bias = module.bias[...] if bias and module.bias is not None else None
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
  >>> layer.mean[...]
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
    """Sets the mode ``nnx.view`` asks for (None: leave it as it is).

    ``nnx.view_info`` shows the argument with this description.

    Args:
      use_running_average: if True, the stored batch statistics will be
        used instead of computing the batch statistics on the input.
    """
    if use_running_average is not None:
      self.use_running_average = use_running_average

  def __call__(
    self, x: Array, use_running_average: _MaybeFlag = None, *, mask=None
  ) -> Array:
    """Normalizes ``x`` (``mask``: True where entries count in the stats).

    ``use_running_average`` overrides the attribute for this call.
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
      mean, var = self.mean[...], self.var[...]
    else:
      stats = {k: getattr(self, k) for k in _STAT_OPTIONS}
      mean, var = _math.compute_stats(x, reduction_axes, mask=mask, **stats)
      # Exponential moving averages; the old value keeps ``momentum``. The
      # running statistics are not differentiated: the update is a
      # constant to JAX's autodiff (so a hijax Variable takes it under grad).
      m = self.momentum
      for stat, batch in ((self.mean, mean), (self.var, var)):
        stat[...] = jax.lax.stop_gradient(m * stat[...] + (1 - m) * batch)
    return _norm_output(self, x, mean, var, reduction_axes, feature_axes)


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
    return _norm_output(
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
    return _norm_output(
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
    args = locals()
    # Channels are the last axis; ``num_features`` only sizes the params.
    self.feature_axis = -1
    self.num_groups = _math.group_norm_groups(
      num_features, num_groups, group_size
    )
    self.group_size = num_features // self.num_groups
    _init_norm(self, args, skip=('num_features',))

  def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
    """Normalizes ``x`` per group of channels."""
    stats = {k: getattr(self, k) for k in _STAT_OPTIONS}
    mean, var, reduction_axes = _math.group_stats(
      x, self.num_groups, self.reduction_axes, mask=mask, **stats
    )
    feature_axes = (self.feature_axis % x.ndim,)
    return _norm_output(self, x, mean, var, reduction_axes, feature_axes)


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
    return _norm_output(self, x, mean, var, reduction_axes, feature_axes)


def _flat_variables(module, variable_filter):
  """``(path, Variable)`` of ``module``'s Variables matching the filter, in
  path order."""
  return list(nnx.to_flat_state(nnx.state(module, variable_filter)))


class SpectralNorm(nnx.Module):
  """Spectral normalization of the parameters of a wrapped layer.

  Every ``nnx.Param`` of ``layer_instance`` with two or more dimensions is
  seen as a matrix (its last axis against all the others) and divided by
  an estimate of its largest singular value, computed by ``n_steps`` steps
  of power iteration. The normalized values replace the layer's own before
  it is called on the inputs. The power-iteration vector ``u`` and the
  estimate ``sigma`` of each parameter are ``nnx.BatchStat`` entries of the
  ``batch_stats`` dict, keyed by the parameter's path plus ``'u'`` /
  ``'sigma'``; they are updated while ``update_stats`` is True.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.SpectralNorm(nnx.Linear(3, 4, rngs=nnx.Rngs(0)),
  ...                          rngs=nnx.Rngs(1))
  >>> sorted(layer.batch_stats)
  [('kernel', 'sigma'), ('kernel', 'u')]
  >>> layer(jnp.ones((2, 3))).shape
  (2, 4)
  >>> round(float(layer.batch_stats['kernel', 'sigma'][...]), 4)
  1.4269

  Args:
    layer_instance: the layer whose parameters are normalized.
    n_steps: power-iteration steps per call (with 0 nothing is normalized
      and no statistics are kept).
    epsilon: added under the square root of the vector normalizations.
    dtype: the dtype of the computation (default: promoted from the
      parameter and ``u``).
    param_dtype: the dtype of ``u`` and ``sigma``.
    error_on_non_matrix: raise a ``ValueError`` for parameters with more
      than two dimensions instead of flattening them.
    update_stats: whether calls update ``u`` and ``sigma`` (the
      ``use_running_average`` attribute is its negation).
    rngs: the ``params`` stream draws the initial ``u`` of each parameter.
  """

  def __init__(
    self,
    layer_instance: nnx.Module,
    *,
    n_steps: int = 1,
    epsilon: float = 1e-12,
    dtype=None,
    param_dtype=jnp.float32,
    error_on_non_matrix: bool = False,
    update_stats: bool = True,
    rngs: nnx.Rngs,
  ):
    keep_args(self, locals(), skip=('update_stats',))
    self.use_running_average = not update_stats
    u_init = initializers.normal(stddev=0.01)
    stats = {}
    for path, value in self._matrices():
      if n_steps < 1:
        break
      u = u_init(rngs.params(), (1, value.shape[-1]), param_dtype)
      stats[(*path, 'u')] = nnx.BatchStat(u)
      stats[(*path, 'sigma')] = nnx.BatchStat(jnp.ones((), param_dtype))
    self.batch_stats = nnx.data(stats)

  def _matrices(self):
    """``(path, Param)`` of the parameters with at least two dimensions."""
    found = []
    for path, param in _flat_variables(self.layer_instance, nnx.Param):
      ndim = jnp.ndim(param[...])
      if ndim <= 1:
        continue
      if ndim > 2 and self.error_on_non_matrix:
        raise ValueError(
          f'Layer instance parameter is {ndim}D but error_on_non_matrix is True'
        )
      found.append((path, param))
    return found

  def __call__(self, x, update_stats: bool | None = None):
    """Normalizes the wrapped layer's parameters, then calls it on ``x``.

    Args:
      x: the input of the wrapped layer.
      update_stats: overrides ``not self.use_running_average``.

    Returns:
      The wrapped layer's output.
    """
    update_stats = first_from(
      update_stats,
      not self.use_running_average,
      error_msg='No `update_stats` argument was provided to SpectralNorm '
      'as either a __call__ argument or class attribute.',
    )
    if self.n_steps >= 1:
      for path, param in self._matrices():
        param[...] = self._normalize(path, param[...], update_stats)
    return self.layer_instance(x)

  def _normalize(self, path, value, update_stats):
    u_stat = self.batch_stats[(*path, 'u')]
    sigma_stat = self.batch_stats[(*path, 'sigma')]
    matrix = jnp.reshape(value, (-1, value.shape[-1]))
    # Power iteration in the promoted dtype of the parameter and ``u``; the
    # result is cast to ``dtype`` (when given), then to the parameter's.
    matrix, u = dtypes.promote_dtype((matrix, u_stat[...]))
    u, _, sigma = _math.power_iteration(matrix, u, self.n_steps, self.epsilon)
    normalized = _math.divide_by_sigma(matrix, sigma)
    if self.dtype is not None:
      normalized = normalized.astype(self.dtype)
    if update_stats:
      u_stat[...] = u.astype(u_stat[...].dtype)
      sigma_stat[...] = sigma.astype(sigma_stat[...].dtype)
    return jnp.reshape(normalized, value.shape).astype(value.dtype)


# WeightNorm's constructor arguments kept as attributes, in this order.
_WEIGHT_NORM_ATTRS = (
  'layer_instance',
  'feature_axes',
  'use_scale',
  'scale_init',
  'epsilon',
  'dtype',
  'param_dtype',
  'variable_filter',
  'promote_dtype',
)


class WeightNorm(nnx.Module):
  """Weight normalization of the parameters of a wrapped layer.

  Each Variable of ``layer_instance`` selected by ``variable_filter`` is
  divided by its L2 norm over every axis not in ``feature_axes`` and, with
  ``use_scale``, multiplied by a learnable scale of the ``feature_axes``
  shape (the ``scales`` dict, keyed by the Variable's path). The
  normalized values replace the layer's own before it is called.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.WeightNorm(nnx.Linear(3, 4, rngs=nnx.Rngs(0)),
  ...                        rngs=nnx.Rngs(1))
  >>> {path: v.shape for path, v in layer.scales.items()}
  {('kernel',): (4,)}
  >>> y = layer(jnp.ones((2, 3)))
  >>> jnp.linalg.norm(layer.layer_instance.kernel[...], axis=0).round(4)
  Array([1., 1., 1., 1.], dtype=float32)

  Args:
    layer_instance: the layer whose Variables are normalized.
    feature_axes: the axes kept by the norm (and of the scales); None
      normalizes over all axes with a scalar scale.
    use_scale: whether to multiply by a scale.
    scale_init: initializer of the scales, called with the ``params``
      stream of ``rngs`` and the shape.
    epsilon: added to the squared norm.
    dtype: the dtype of the computation (and of the normalized Variables).
    param_dtype: the dtype of parameters (kept as an attribute).
    variable_filter: selects the Variables to normalize (default: those
      named ``kernel``).
    promote_dtype: dtype promotion function, given the 1-tuple of the
      normalized (and scaled) value and ``dtype``: casts it to ``dtype``.
    rngs: rng container (see ``scale_init``).
  """

  def __init__(
    self,
    layer_instance: nnx.Module,
    *,
    feature_axes: Axes | None = -1,
    use_scale: bool = True,
    scale_init=initializers.ones,
    epsilon: float = 1e-12,
    dtype=None,
    param_dtype=jnp.float32,
    variable_filter=nnx.PathContains('kernel', exact=True),
    promote_dtype=dtypes.promote_dtype,
    rngs: nnx.Rngs,
  ):
    args = locals()
    for name in _WEIGHT_NORM_ATTRS:
      setattr(self, name, args[name])
    scales = None
    if use_scale:
      scales = {}
      for path, variable in _flat_variables(layer_instance, variable_filter):
        shape = jnp.shape(variable[...])
        kept = self._feature_axes(len(shape))
        scales[path] = scale_init(rngs.params, tuple(shape[a] for a in kept))
    self.scales = nnx.data(scales)

  def _feature_axes(self, ndim: int) -> tuple[int, ...]:
    if self.feature_axes is None:
      return ()
    return _math.canonicalize_axes(ndim, self.feature_axes)

  def __call__(self, x, *args, **kwargs):
    """Normalizes the selected Variables, then calls the wrapped layer.

    Args:
      x: the first argument of the wrapped layer.
      *args: more positional arguments of the wrapped layer.
      **kwargs: keyword arguments of the wrapped layer.

    Returns:
      The wrapped layer's output.
    """
    for path, variable in _flat_variables(
      self.layer_instance, self.variable_filter
    ):
      variable.set_value(self._normalize(path, variable[...]))
    return self.layer_instance(x, *args, **kwargs)

  def _normalize(self, path, value):
    kept = self._feature_axes(jnp.ndim(value))
    reduced = tuple(a for a in range(jnp.ndim(value)) if a not in kept)
    squares = jnp.sum(value * value, axis=reduced, keepdims=True)
    value = value * jax.lax.rsqrt(squares + self.epsilon)
    if self.use_scale:
      # Scaled in the promoted dtype of the value and the scale (as Flax
      # 0.12.8), and only then cast to ``dtype``.
      scale = self.scales[path]
      shape = [1] * value.ndim
      for a, size in zip(kept, jnp.shape(scale)):
        shape[a] = size
      value = value * jnp.reshape(scale, shape)
    (value,) = self.promote_dtype((value,), dtype=self.dtype)
    return value


# Helpers that code built on NNX imports from this module by name
# (``flax.nnx.nn.normalization._compute_stats`` etc.) for its own norms.
_canonicalize_axes = _math.canonicalize_axes
_abs_sq = _math.abs_sq


def _compute_stats(
  x,
  axes,
  dtype,
  axis_name=None,
  axis_index_groups=None,
  use_mean=True,
  use_fast_variance=True,
  mask=None,
):
  """Mean and variance of ``x`` over ``axes``, reduced in at least float32
  (see :func:`flax.layers.normalization.compute_stats`)."""
  return _math.compute_stats(
    x,
    axes,
    dtype,
    axis_name,
    axis_index_groups,
    use_mean=use_mean,
    use_fast_variance=use_fast_variance,
    mask=mask,
  )


def _normalize(
  x, mean, var, scale, bias, reduction_axes, feature_axes, dtype, epsilon
):
  """Normalizes ``x`` with the given statistics and (optional) ``scale`` /
  ``bias`` arrays over ``feature_axes``; None ``dtype`` promotes."""
  return _math.normalize(
    x,
    mean,
    var,
    reduction_axes,
    feature_axes,
    scale,
    bias,
    dtype=dtype,
    epsilon=epsilon,
  )
