"""Linen normalization layers.

BatchNorm keeps running statistics in the ``batch_stats`` collection
(``mean`` and ``var``, float32); the other norms are stateless. Every norm
creates ``scale`` then ``bias`` over its feature axes.
"""

import dataclasses
import functools
from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp

from flax.layers import initializers, normalization
from flax.layers.dtypes import F32, MaybeDtype, canonicalize_dtype
from flax.layers.initializers import ones, zeros
from flax.linen import Module, compact, map_variables, merge_param

Array = Any
Axes = int | Any
Dtype = Any
Initializer = initializers.Initializer
AxisName = str | None
MaybeFlag = bool | None
OptInt = int | None


def _norm_with_params(
  mdl, x, mean, var, reduction_axes, feature_axes, use_bias
):
  """Creates ``scale`` then ``bias`` (in that order) over ``feature_axes``
  and normalizes ``x`` with them."""
  param_shape, _ = normalization.feature_shapes(
    tuple(x.shape), normalization.canonicalize_axes(x.ndim, feature_axes)
  )
  scale = bias = None
  if mdl.use_scale:
    scale = mdl.param('scale', mdl.scale_init, param_shape, mdl.param_dtype)
  if use_bias:
    bias = mdl.param('bias', mdl.bias_init, param_shape, mdl.param_dtype)
  return normalization.normalize(
    x,
    mean,
    var,
    reduction_axes,
    feature_axes,
    scale,
    bias,
    dtype=mdl.dtype,
    epsilon=mdl.epsilon,
  )


class BatchNorm(Module):
  """Normalizes with batch statistics, keeping running averages of them.

  The running ``mean`` and ``var`` (float32) live in ``batch_stats``;
  ``use_running_average`` (field or argument, exactly one) switches from
  the batch's statistics to them. ``axis`` is the feature axis, and
  ``axis_name`` / ``axis_index_groups`` average the statistics over a
  mapped axis. ``momentum`` is the weight the running value keeps.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> bn = nn.BatchNorm(use_running_average=False)
    >>> x = jnp.arange(8.0).reshape(4, 2)
    >>> v = bn.init(jax.random.key(1), x)
    >>> y, new = bn.apply(v, x, mutable=['batch_stats'])
    >>> new['batch_stats']['mean']
    Array([0.03, 0.04], dtype=float32)
  """

  use_running_average: MaybeFlag = None
  axis: int = -1
  momentum: float = 0.99
  epsilon: float = 1e-5
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  use_bias: bool = True
  use_scale: bool = True
  bias_init: Initializer = zeros
  scale_init: Initializer = ones
  axis_name: AxisName = None
  axis_index_groups: Any = None
  use_fast_variance: bool = True
  force_float32_reductions: bool = True

  @compact
  def __call__(self, x, use_running_average: MaybeFlag = None, *, mask=None):
    """Normalizes ``x``; ``mask`` picks the entries the statistics see."""
    use_running_average = merge_param(
      'use_running_average', self.use_running_average, use_running_average
    )
    feature_axes, reduction_axes = normalization.batch_norm_axes(
      x.ndim, self.axis
    )
    feature_shape = tuple(x.shape[ax] for ax in feature_axes)

    # The running statistics, float32 whatever the input: a mean of
    # zeros and a variance of ones until the first update.
    running = {
      name: self.variable('batch_stats', name, fill, feature_shape, jnp.float32)
      for name, fill in (('mean', jnp.zeros), ('var', jnp.ones))
    }
    if use_running_average:
      mean, var = running['mean'].value, running['var'].value
    else:
      initializing = self.is_initializing()
      mean, var = normalization.compute_stats(
        x,
        reduction_axes,
        dtype=self.dtype,
        axis_name=None if initializing else self.axis_name,
        axis_index_groups=self.axis_index_groups,
        use_fast_variance=self.use_fast_variance,
        mask=mask,
        force_float32_reductions=self.force_float32_reductions,
      )
      if not initializing:
        _decay_into(running, self.momentum, mean=mean, var=var)
    return _norm_with_params(
      self, x, mean, var, reduction_axes, feature_axes, self.use_bias
    )


def _decay_into(running, momentum, **batch):
  """Moves each running statistic towards its batch value.

  The running value keeps ``momentum`` of its weight (an exponential
  moving average).
  """
  for name, value in batch.items():
    stat = running[name]
    stat.value = momentum * stat.value + (1 - momentum) * value


class LayerNorm(Module):
  """Normalizes each example over ``reduction_axes`` (arxiv 1607.06450).

  ``scale`` and ``bias`` span ``feature_axes``; ``use_fast_variance``
  takes the variance as ``E[x**2] - E[x]**2``; ``force_float32_reductions``
  reduces in at least float32.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> ln = nn.LayerNorm()
    >>> x = jnp.array([[1.0, 3.0]])
    >>> ln.apply(ln.init(jax.random.key(1), x), x).round(3)
    Array([[-1.,  1.]], dtype=float32)
  """

  epsilon: float = 1e-6
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  use_bias: bool = True
  use_scale: bool = True
  bias_init: Initializer = zeros
  scale_init: Initializer = ones
  reduction_axes: Axes = -1
  feature_axes: Axes = -1
  axis_name: AxisName = None
  axis_index_groups: Any = None
  use_fast_variance: bool = True
  force_float32_reductions: bool = True

  @compact
  def __call__(self, x, *, mask=None):
    """Normalizes ``x``; ``mask`` picks the entries the statistics see."""
    axes = self.reduction_axes, self.feature_axes
    mean, var = normalization.layer_stats(self, x, axes[0], mask)
    return _norm_with_params(self, x, mean, var, *axes, self.use_bias)


class RMSNorm(Module):
  """``x / sqrt(mean(x**2) + epsilon)`` times ``scale`` (arxiv 1910.07467).

  LayerNorm without the centering and without a bias.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> norm = nn.RMSNorm(epsilon=0.0)
    >>> x = jnp.array([[3.0, 4.0]])
    >>> y = norm.apply(norm.init(jax.random.key(1), x), x)
    >>> (y**2).mean().round(3)
    Array(1., dtype=float32)
  """

  epsilon: float = 1e-6
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  use_scale: bool = True
  scale_init: Initializer = ones
  reduction_axes: Axes = -1
  feature_axes: Axes = -1
  axis_name: AxisName = None
  axis_index_groups: Any = None
  use_fast_variance: bool = True
  force_float32_reductions: bool = True

  @compact
  def __call__(self, x, *, mask=None):
    """Normalizes ``x``; ``mask`` picks the entries the statistics see."""
    mean, var = normalization.layer_stats(
      self, x, self.reduction_axes, mask, use_mean=False
    )
    return _norm_with_params(
      self, x, mean, var, self.reduction_axes, self.feature_axes, False
    )


class GroupNorm(Module):
  """Normalizes groups of channels of each example (arxiv 1803.08494).

  The channels (last axis) form ``num_groups`` groups, or groups of
  ``group_size``: exactly one of the two is set. The statistics cover
  ``reduction_axes`` (default: all but the first) within a group.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> gn = nn.GroupNorm(num_groups=2)
    >>> v = gn.init(jax.random.key(1), jnp.zeros((1, 3, 4)))
    >>> v['params']['scale'].shape, v['params']['bias'].shape
    ((4,), (4,))
  """

  num_groups: OptInt = 32
  group_size: OptInt = None
  epsilon: float = 1e-6
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  use_bias: bool = True
  use_scale: bool = True
  bias_init: Initializer = zeros
  scale_init: Initializer = ones
  reduction_axes: Axes | None = None
  axis_name: AxisName = None
  axis_index_groups: Any = None
  use_fast_variance: bool = True
  force_float32_reductions: bool = True

  @compact
  def __call__(self, x, *, mask=None):
    """Normalizes ``(N, ..., C)`` inputs; ``mask`` as for LayerNorm."""
    num_groups = normalization.group_norm_groups(
      x.shape[-1], self.num_groups, self.group_size
    )
    reduction_axes = self.reduction_axes
    if reduction_axes is not None and isinstance(reduction_axes, int):
      reduction_axes = (reduction_axes,)
    mean, var, stat_axes = normalization.group_stats(
      x,
      num_groups,
      reduction_axes,
      self.dtype,
      self.axis_name,
      self.axis_index_groups,
      self.use_fast_variance,
      mask,
      self.force_float32_reductions,
    )
    return _norm_with_params(
      self, x, mean, var, stat_axes, (x.ndim - 1,), self.use_bias
    )


class InstanceNorm(Module):
  """Normalizes each example and channel over the other axes (1607.08022).

  Axis 0 is the batch; ``feature_axes`` (default: the last) keep their own
  statistics and get ``scale`` / ``bias``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> norm = nn.InstanceNorm()
    >>> v = norm.init(jax.random.key(1), jnp.zeros((2, 5, 3)))
    >>> v['params']['scale'].shape
    (3,)
  """

  epsilon: float = 1e-6
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  use_bias: bool = True
  use_scale: bool = True
  bias_init: Initializer = zeros
  scale_init: Initializer = ones
  feature_axes: Axes = -1
  axis_name: AxisName = None
  axis_index_groups: Any = None
  use_fast_variance: bool = True
  force_float32_reductions: bool = True

  @compact
  def __call__(self, x, *, mask=None):
    """Normalizes ``x``; ``mask`` picks the entries the statistics see."""
    feature_axes, reduction_axes = normalization.instance_norm_axes(
      x.ndim, self.feature_axes
    )
    mean, var = normalization.layer_stats(self, x, reduction_axes, mask)
    return _norm_with_params(
      self, x, mean, var, reduction_axes, feature_axes, self.use_bias
    )


def _key_name(k) -> str:
  # Dict keys, attribute names (e.g. ``value`` of a boxed param) and
  # sequence indices, as plain names.
  for field in ('key', 'name', 'idx'):
    if hasattr(k, field):
      return str(getattr(k, field))
  return str(k)


def _path_name(path) -> str:
  return '/'.join(_key_name(k) for k in path)


class SpectralNorm(Module):
  """Spectral normalization of the parameters of a wrapped layer.

  Each parameter with two or more dimensions is divided by its largest
  singular value, estimated by power iteration. The power-iteration vector
  ``u`` and the estimate ``sigma`` live in ``collection_name``
  (``batch_stats``) under ``'<layer name>/<param path>/u'`` and ``.../sigma``
  and are updated when ``update_stats=True``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> class Foo(nn.Module):
    ...   @nn.compact
    ...   def __call__(self, x, train):
    ...     x = nn.Dense(3)(x)
    ...     return nn.SpectralNorm(nn.Dense(4))(x, update_stats=train)
    >>> variables = Foo().init(jax.random.key(0), jnp.ones((1, 2)), False)
    >>> jax.tree_util.tree_map(jnp.shape, variables['batch_stats'])
    {'SpectralNorm_0': {'Dense_1/kernel/sigma': (), 'Dense_1/kernel/u': (1, 4)}}

  Attributes:
    layer_instance: the Module to wrap.
    n_steps: power-iteration steps per call.
    epsilon: a small float added to norms to avoid dividing by zero.
    dtype: the dtype of the result (default: infer).
    param_dtype: the dtype of ``u`` and ``sigma``.
    error_on_non_matrix: raise for parameters with more than two dimensions
      instead of flattening their leading axes.
    collection_name: the collection holding ``u`` and ``sigma``.
  """

  layer_instance: Module
  n_steps: int = 1
  epsilon: float = 1e-12
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  error_on_non_matrix: bool = False
  collection_name: str = 'batch_stats'

  @compact
  def __call__(self, *args, update_stats: bool, **kwargs):
    """Calls the wrapped layer with spectrally normalized parameters.

    Args:
      *args: positional arguments of the layer.
      update_stats: whether to store the new ``u`` and ``sigma``.
      **kwargs: keyword arguments of the layer.

    Returns:
      The output of the layer.
    """

    def layer_forward(layer_instance):
      return layer_instance(*args, **kwargs)

    normalize = functools.partial(
      self._spectral_normalize, update_stats=update_stats
    )
    return map_variables(
      layer_forward,
      trans_in_fn=lambda vs: jax.tree_util.tree_map_with_path(normalize, vs),
      init=self.is_initializing(),
      mutable=True,
    )(self.layer_instance)

  def _spectral_normalize(self, path, vs, update_stats):
    value = jnp.asarray(vs)
    if value.ndim < 2 or self.n_steps < 1:
      return value  # vectors, scalars, or no iteration: left alone
    if value.ndim > 2 and self.error_on_non_matrix:
      raise ValueError(
        f'Input is {value.ndim}D but error_on_non_matrix is True'
      )
    # Higher-rank parameters are treated as (rows, last axis) matrices.
    matrix = jnp.reshape(value, (-1, value.shape[-1]))
    stat = self.layer_instance.name + '/' + _path_name(path[1:])
    where = self.collection_name
    # ``u`` starts random: a key is only drawn when it does not exist yet.
    first_u_key = None
    if not self.has_variable(where, stat + '/u'):
      first_u_key = self.make_rng('params')
    u_var = self.variable(
      where,
      stat + '/u',
      jax.random.normal,
      first_u_key,
      (1, matrix.shape[-1]),
      self.param_dtype,
    )
    sigma_var = self.variable(
      where, stat + '/sigma', jnp.ones, (), self.param_dtype
    )
    u, v, sigma = normalization.power_iteration(
      matrix, u_var.value, self.n_steps, self.epsilon
    )
    if update_stats:
      u_var.value, sigma_var.value = u, sigma
    result = normalization.divide_by_sigma(matrix, sigma).reshape(value.shape)
    return jnp.asarray(
      result, canonicalize_dtype(vs, u, v, sigma, dtype=self.dtype)
    )


class WeightNorm(Module):
  """Weight normalization of the parameters of a wrapped layer.

  Each selected parameter is divided by its L2 norm over the non-feature
  axes and multiplied by a learned ``scale`` parameter, stored in this
  module as ``'<layer name>/<param path>/scale'``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> class Foo(nn.Module):
    ...   @nn.compact
    ...   def __call__(self, x):
    ...     return nn.WeightNorm(nn.Dense(4))(x)
    >>> variables = Foo().init(jax.random.key(0), jnp.ones((1, 2)))
    >>> jax.tree_util.tree_map(jnp.shape, variables['params'])
    {'Dense_0': {'bias': (4,), 'kernel': (2, 4)}, 'WeightNorm_0': {'Dense_0/kernel/scale': (4,)}}

  Attributes:
    layer_instance: the Module to wrap.
    epsilon: a small float added to norms to avoid dividing by zero.
    dtype: the dtype of the result (default: infer).
    param_dtype: the dtype of ``scale``.
    use_scale: whether to learn a scale.
    scale_init: initializer of the scale.
    feature_axes: axes kept by the norm (None: normalize the whole array).
    variable_filter: substrings of the variable paths to normalize (None or
      empty: every variable).
  """

  layer_instance: Module
  epsilon: float = 1e-12
  dtype: MaybeDtype = None
  param_dtype: Dtype = F32
  use_scale: bool = True
  scale_init: Initializer = ones
  feature_axes: Axes | None = -1
  variable_filter: Iterable | None = dataclasses.field(
    default_factory=lambda: {'kernel'}
  )

  @compact
  def __call__(self, *args, **kwargs):
    """Calls the wrapped layer with weight-normalized parameters.

    Args:
      *args: positional arguments of the layer.
      **kwargs: keyword arguments of the layer.

    Returns:
      The output of the layer.
    """

    def layer_forward(layer_instance):
      return layer_instance(*args, **kwargs)

    return map_variables(
      layer_forward,
      trans_in_fn=lambda vs: jax.tree_util.tree_map_with_path(
        self._l2_normalize, vs
      ),
      init=self.is_initializing(),
    )(self.layer_instance)

  def _l2_normalize(self, path, vs):
    value = jnp.asarray(vs)
    name = self.layer_instance.name + '/' + _path_name(path[1:])
    if self.variable_filter:
      if not any(v in name for v in self.variable_filter):
        return value
    if self.feature_axes is None:
      feature_axes = ()
      reduction_axes = tuple(range(value.ndim))
    else:
      feature_axes = normalization.canonicalize_axes(
        value.ndim, self.feature_axes
      )
      reduction_axes = tuple(
        i for i in range(value.ndim) if i not in feature_axes
      )
    param_shape = [value.shape[ax] for ax in feature_axes]
    broadcast = [
      value.shape[i] if i in feature_axes else 1 for i in range(value.ndim)
    ]
    value_bar = normalization.l2_normalize(
      value, axis=reduction_axes, eps=self.epsilon
    )
    args = [vs]
    if self.use_scale:
      scale = self.param(
        name + '/scale', self.scale_init, param_shape, self.param_dtype
      ).reshape(broadcast)
      value_bar *= scale
      args.append(scale)
    return jnp.asarray(value_bar, canonicalize_dtype(*args, dtype=self.dtype))


# Helpers that code built on Linen imports from this module by name
# (``from flax.linen.normalization import _compute_stats, _normalize``) to
# write its own norm layers; they keep the signatures such code calls.
_canonicalize_axes = normalization.canonicalize_axes
_compute_stats = normalization.compute_stats
_abs_sq = normalization.abs_sq
_l2_normalize = normalization.l2_normalize


def _normalize(
  mdl,
  x,
  mean,
  var,
  reduction_axes,
  feature_axes,
  dtype,
  param_dtype,
  epsilon,
  use_bias,
  use_scale,
  bias_init,
  scale_init,
  force_float32_reductions=True,
):
  """Declares ``scale`` / ``bias`` on ``mdl`` and normalizes ``x``.

  The parameters (``scale`` first, then ``bias``) cover ``feature_axes``
  and are made with ``param_dtype``; the output is in ``dtype`` (None
  promotes the input and the parameters).

  Args:
    mdl: the bound Linen Module that owns the parameters.
    x: the input.
    mean: mean of ``x`` with ``reduction_axes`` removed.
    var: variance of ``x`` with ``reduction_axes`` removed.
    reduction_axes: the axes the statistics were taken over.
    feature_axes: the axes the parameters cover.
    dtype: output dtype, or None.
    param_dtype: dtype of ``scale`` and ``bias``.
    epsilon: added to the variance.
    use_bias: whether to add a learned ``bias``.
    use_scale: whether to multiply by a learned ``scale``.
    bias_init: initializer of ``bias``.
    scale_init: initializer of ``scale``.
    force_float32_reductions: when True, statistics in a narrower float
      type are widened to float32 before they meet the input.

  Returns:
    The normalized array.
  """
  if force_float32_reductions:
    wide = jnp.promote_types(jnp.result_type(mean), jnp.float32)
    mean, var = jnp.asarray(mean, wide), jnp.asarray(var, wide)
  param_shape, _ = normalization.feature_shapes(
    tuple(x.shape), normalization.canonicalize_axes(x.ndim, feature_axes)
  )
  made = {}
  for name, wanted, init in (
    ('scale', use_scale, scale_init),
    ('bias', use_bias, bias_init),
  ):
    if wanted:
      made[name] = mdl.param(name, init, param_shape, param_dtype)
  return normalization.normalize(
    x,
    mean,
    var,
    reduction_axes,
    feature_axes,
    made.get('scale'),
    made.get('bias'),
    dtype=dtype,
    epsilon=epsilon,
  )
