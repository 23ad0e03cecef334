"""Linear NNX layers: ``Linear``, ``LinearGeneral``, ``Einsum``, ``Embed``.

``flax.nnx.nn.linear`` also holds the convolutions (``Conv``,
``ConvTranspose``), which live in :mod:`flax.layers.nnx.conv`.
"""

from __future__ import annotations

import dataclasses
import typing as tp
from types import MappingProxyType

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from flax import nnx
from flax.core import jax_defaults
from flax.nnx import Module as Module
from flax.typing import PromoteDtypeFn as PromoteDtypeFn
from flax.core.frozen_dict import FrozenDict
from flax.layers import linear as _math
from flax.layers.nnx import dtypes
from flax.layers.nnx import initializers
from flax.layers.nnx._utils import first_from
from flax.layers.nnx._utils import init_kernel_bias
from flax.layers.nnx._utils import keep_args
from flax.layers.nnx._utils import optional_data
from flax.layers.nnx._utils import param_key

Array = jax.Array
Shape = tp.Sequence[int]
Size = int | tp.Sequence[int]
Axis = int | tp.Sequence[int]

default_kernel_init = initializers.lecun_normal()
default_bias_init = initializers.zeros_init()
default_embed_init = initializers.variance_scaling(
  1.0, 'fan_in', 'normal', out_axis=0
)

_EMPTY = MappingProxyType({})


def canonicalize_tuple(x):
  """Returns ``x`` as a tuple (an int becomes a 1-tuple)."""
  if isinstance(x, tp.Iterable):
    return tuple(x)
  return (x,)


# Helpers that code built on NNX imports from this module by name.
_canonicalize_tuple = canonicalize_tuple
_conv_dimension_numbers = _math.conv_dimension_numbers


def _normalize_axes(axes: tuple[int, ...], ndim: int) -> tuple[int, ...]:
  return tuple(sorted(ax if ax >= 0 else ndim + ax for ax in axes))


def _dot_general_kwargs(preferred_element_type, out_sharding):
  """The keywords a layer's product function gets besides ``precision``:
  ``out_sharding`` always (None included), ``preferred_element_type`` when
  one is set (as Flax 0.12.8 calls them)."""
  if preferred_element_type is None:
    return {'out_sharding': out_sharding}
  return {
    'preferred_element_type': preferred_element_type,
    'out_sharding': out_sharding,
  }


def _reshape(value, shape):
  """Reshapes an initializer output (an array or ``nnx.VariableMetadata``)."""
  if isinstance(value, nnx.VariableMetadata):
    return dataclasses.replace(
      value, raw_value=jnp.reshape(value.raw_value, shape)
    )
  return jnp.reshape(value, shape)


class Linear(nnx.Module):
  """``x @ kernel + bias`` over the last axis of ``x``.

  ``kernel`` is ``(in_features, out_features)`` and, with ``use_bias``,
  ``bias`` is ``(out_features,)``; both are ``nnx.Param`` and take their
  keys from ``rngs.params()``, kernel first.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.Linear(2, 5, rngs=nnx.Rngs(1))
  >>> layer.kernel.shape, layer.bias.shape, layer(jnp.ones((3, 2))).shape
  ((2, 5), (5,), (3, 5))

  Args:
    in_features: size of the input's last axis.
    out_features: size of the output's last axis.
    use_bias: add a learned bias (default True).
    dtype: computation dtype (None: promoted from inputs and params).
    param_dtype: dtype the parameters are created in (float32).
    precision: ``jax.lax.Precision`` of the product.
    kernel_init: creates the kernel.
    bias_init: creates the bias.
    dot_general: the product (``lax.dot_general`` by default).
    promote_dtype: casts ``(inputs, kernel, bias)`` together; called with
      a ``dtype`` keyword.
    preferred_element_type: accumulation dtype of the product.
    rngs: where the parameter keys come from.
    kernel_metadata: metadata stored on the ``kernel`` Param.
    bias_metadata: metadata stored on the ``bias`` Param.
  """

  def __init__(
    self,
    in_features: int,
    out_features: int,
    *,
    use_bias: bool = True,
    dtype=None,
    param_dtype=jnp.float32,
    precision=None,
    kernel_init=default_kernel_init,
    bias_init=default_bias_init,
    dot_general=jax_defaults.dot_general,
    promote_dtype=dtypes.promote_dtype,
    preferred_element_type=None,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    init_kernel_bias(
      self,
      locals(),
      (in_features, out_features),
      (out_features,) if use_bias else None,
    )

  def __call__(self, inputs: Array, out_sharding=None) -> Array:
    """Applies the linear transformation to the last axis of ``inputs``."""
    bias = None if self.bias is None else self.bias[...]
    arrays = self.promote_dtype(
      (inputs, self.kernel[...], bias), dtype=self.dtype
    )
    inputs, kernel, bias = arrays
    # ``self.dot_general`` as given (``jax.lax.dot_general`` by default),
    # called eagerly with the caller's values.
    y = self.dot_general(
      inputs,
      kernel,
      (((inputs.ndim - 1,), (0,)), ((), ())),
      precision=self.precision,
      **_dot_general_kwargs(self.preferred_element_type, out_sharding),
    )
    if bias is not None:
      y = _math.add_trailing(y, bias)
    return y


class LinearGeneral(nnx.Module):
  """A linear transformation with flexible input and output axes.

  The ``kernel`` has shape ``(*batch_shape, *in_features, *out_features)``
  and the ``bias`` ``(*batch_shape, *out_features)``, where ``batch_shape``
  lists the sizes in ``batch_axis``. The initializers see the flattened 2-D
  (kernel) and 1-D (bias) shapes, as in Flax.

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> layer = nnx.LinearGeneral(5, (3, 4), rngs=nnx.Rngs(0))
  >>> layer.kernel.shape
  (5, 3, 4)
  >>> layer(jnp.ones((2, 5))).shape
  (2, 3, 4)

  Args:
    in_features: int or tuple, the sizes of the contracted input axes.
    out_features: int or tuple, the output feature sizes.
    axis: int or tuple, the input axes to contract.
    batch_axis: mapping from input axis to its size, for axes that are
      batched over (kept in the output, with their own kernel slices).
    use_bias: whether to add a bias to the output (default: True).
    dtype: the dtype of the computation (default: infer from input and
      params).
    param_dtype: the dtype passed to parameter initializers.
    kernel_init: initializer function for the weight matrix.
    bias_init: initializer function for the bias.
    precision: numerical precision of the computation.
    dot_general: dot product function.
    dot_general_cls: a class whose instance is used as ``dot_general``.
    promote_dtype: dtype promotion function.
    preferred_element_type: the accumulation dtype of ``dot_general``.
    rngs: rng key container.
    kernel_metadata: extra metadata for the ``kernel`` Param.
    bias_metadata: extra metadata for the ``bias`` Param.
  """

  def __init__(
    self,
    in_features: Size,
    out_features: Size,
    *,
    axis: Axis = -1,
    batch_axis: tp.Mapping[int, int] = _EMPTY,
    use_bias: bool = True,
    dtype=None,
    param_dtype=jnp.float32,
    kernel_init=default_kernel_init,
    bias_init=default_bias_init,
    precision: tp.Any = None,
    dot_general=None,
    dot_general_cls=None,
    promote_dtype=dtypes.promote_dtype,
    preferred_element_type=None,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    self.in_features = canonicalize_tuple(in_features)
    self.out_features = canonicalize_tuple(out_features)
    self.axis = canonicalize_tuple(axis)
    self.batch_axis = FrozenDict(batch_axis)
    if len(self.in_features) != len(self.axis):
      raise ValueError(
        'in_features and axis must have the same length. '
        f'Got {self.in_features} and {self.axis}.'
      )
    if dot_general is not None and dot_general_cls is not None:
      raise ValueError(
        'Cannot specify both dot_general and dot_general_cls, '
        f'got {dot_general=} and {dot_general_cls=}'
      )
    keep_args(self, locals())
    batch_shape = tuple(self.batch_axis.values())
    kernel_shape = (*batch_shape, *self.in_features, *self.out_features)
    bias_shape = (*batch_shape, *self.out_features) if use_bias else None
    # The initializers see a 2-D kernel (batch and contracted axes folded
    # into its rows) and a 1-D bias; the results take the layer's shapes.
    rows = int(np.prod(kernel_shape[: -len(self.out_features)]))
    kernel = kernel_init(
      rngs.params(), (rows, int(np.prod(self.out_features))), param_dtype
    )
    self.kernel = nnx.Param(_reshape(kernel, kernel_shape), **kernel_metadata)
    if bias_shape is None:
      self.bias = optional_data(None)
    else:
      size = int(np.prod(bias_shape))
      bias = bias_init(param_key(rngs, bias_init), (size,), param_dtype)
      self.bias = nnx.Param(_reshape(bias, bias_shape), **bias_metadata)

  def _dot_general(self):
    """The contraction function: a fresh ``dot_general_cls()`` per call, the
    given ``dot_general``, or ``lax.dot_general``."""
    if self.dot_general_cls is not None:
      return self.dot_general_cls()
    if self.dot_general is not None:
      return self.dot_general
    return lax.dot_general

  def __call__(self, inputs: Array, out_sharding=None) -> Array:
    """Contracts ``axis`` of ``inputs`` with the kernel."""
    ndim = inputs.ndim
    axis = _normalize_axes(self.axis, ndim)
    batch_axis = _normalize_axes(tuple(self.batch_axis.keys()), ndim)
    n_batch, n_in = len(batch_axis), len(axis)
    expanded_batch_shape = tuple(
      inputs.shape[ax] if ax in batch_axis else 1
      for ax in range(ndim)
      if ax not in axis
    )
    kernel = self.kernel[...]
    bias = self.bias[...] if self.bias is not None else None
    inputs, kernel, bias = self.promote_dtype(
      (inputs, kernel, bias), dtype=self.dtype
    )
    kernel_axes = tuple(range(n_batch, n_batch + n_in))
    out = self._dot_general()(
      inputs,
      kernel,
      ((axis, kernel_axes), (batch_axis, tuple(range(n_batch)))),
      precision=self.precision,
      **_dot_general_kwargs(self.preferred_element_type, out_sharding),
    )
    if bias is not None:
      out = out + jnp.reshape(bias, (*expanded_batch_shape, *self.out_features))
    return out


class Einsum(nnx.Module):
  """A linear map written as an einsum equation ``'inputs,kernel->out'``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.Einsum('nta,hab->nthb', (8, 2, 4), (8, 4), rngs=nnx.Rngs(0))
  >>> layer(jnp.ones((16, 11, 2))).shape
  (16, 11, 8, 4)

  Args:
    einsum_str: the default equation (``__call__`` may pass another one).
    kernel_shape: the shape of the ``kernel`` Param.
    bias_shape: the shape of the ``bias`` Param; None for no bias.
    dtype: the dtype of the computation.
    param_dtype: the dtype passed to parameter initializers.
    precision: numerical precision of the computation.
    kernel_init: initializer function for the kernel.
    bias_init: initializer function for the bias.
    promote_dtype: dtype promotion function.
    einsum_op: the einsum function (default ``jnp.einsum``).
    preferred_element_type: the accumulation dtype.
    rngs: rng key container.
    kernel_metadata: extra metadata for the ``kernel`` Param.
    bias_metadata: extra metadata for the ``bias`` Param.
  """

  def __init__(
    self,
    einsum_str: str,
    kernel_shape: Shape,
    bias_shape: Shape | None = None,
    *,
    dtype=None,
    param_dtype=jnp.float32,
    precision=None,
    kernel_init=default_kernel_init,
    bias_init=default_bias_init,
    promote_dtype=dtypes.promote_dtype,
    einsum_op=jax_defaults.einsum,
    preferred_element_type=None,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    einsum_str = _math.check_einsum_str(einsum_str)
    kernel_shape = canonicalize_tuple(kernel_shape)
    bias_shape = None if bias_shape is None else canonicalize_tuple(bias_shape)
    init_kernel_bias(self, locals(), kernel_shape, bias_shape)

  def __call__(
    self, inputs: Array, einsum_str: str | None = None, out_sharding=None
  ) -> Array:
    """Applies the equation (``einsum_str`` overrides the default one).

    Args:
      inputs: the input array.
      einsum_str: an equation replacing the default one for this call.
      out_sharding: sharding of the result (explicit sharding mode).

    Returns:
      The einsum of ``inputs`` and the kernel, plus the bias.
    """
    einsum_str = first_from(
      einsum_str,
      self.einsum_str,
      error_msg='No `einsum_str` argument was provided to Einsum as either '
      'a __call__ argument, or class attribute.',
    )
    einsum_str = _math.check_einsum_str(einsum_str)
    kernel = self.kernel[...]
    bias = self.bias[...] if self.bias is not None else None
    inputs, kernel, bias = self.promote_dtype(
      (inputs, kernel, bias), dtype=self.dtype
    )
    extra = _dot_general_kwargs(self.preferred_element_type, out_sharding)
    extra['precision'] = self.precision
    y = self.einsum_op(einsum_str, inputs, kernel, **extra)
    if bias is not None:
      _, shape = _math.einsum_bias_shape(einsum_str, inputs.ndim, kernel.shape)
      y = y + jnp.reshape(bias, shape)
    return y


class Embed(nnx.Module):
  """A parameterized lookup table from integer ids to vectors.

  The ``embedding`` Param has shape ``(num_embeddings, features)``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.Embed(num_embeddings=5, features=3, rngs=nnx.Rngs(0))
  >>> layer(jnp.array([[0, 4]])).shape
  (1, 2, 3)

  Args:
    num_embeddings: the number of embeddings (vocabulary size).
    features: the size of each embedding.
    dtype: the dtype of the embedding vectors (default, and the ``dtype``
      attribute then: the dtype of the embedding table).
    param_dtype: the dtype passed to the initializer.
    embedding_init: the initializer of the embedding table.
    promote_dtype: dtype promotion function.
    rngs: rng key container.
    embedding_metadata: extra metadata for the ``embedding`` Param.
  """

  def __init__(
    self,
    num_embeddings: int,
    features: int,
    *,
    dtype=None,
    param_dtype=jnp.float32,
    embedding_init=default_embed_init,
    promote_dtype=dtypes.promote_dtype,
    rngs: nnx.Rngs,
    embedding_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    self.embedding = nnx.Param(
      embedding_init(rngs.params(), (num_embeddings, features), param_dtype),
      **embedding_metadata,
    )
    # Without a ``dtype`` the table's own dtype is the computation dtype.
    keep_args(
      self,
      locals(),
      dtype=self.embedding[...].dtype if dtype is None else dtype,
    )

  def __call__(self, inputs: Array, out_sharding=None) -> Array:
    """Looks up the embeddings of the integer ids in ``inputs``.

    Args:
      inputs: integer ids, any shape.
      out_sharding: sharding of the result (explicit sharding mode).

    Returns:
      ``inputs.shape + (features,)`` vectors; out-of-range ids give NaN.
    """
    if not jnp.issubdtype(inputs.dtype, jnp.integer):
      raise ValueError('Input type must be an integer or unsigned integer.')
    (table,) = self.promote_dtype(
      (self.embedding[...],), dtype=self.dtype, inexact=False
    )
    if out_sharding is None:
      return _math.embed_lookup(table, inputs)
    if self.num_embeddings == 1:
      table = jnp.broadcast_to(table, (1, *table.shape[1:]))
      inputs = jnp.zeros_like(inputs)
    return table.at[inputs].get(out_sharding=out_sharding)

  def attend(self, query: Array, out_sharding=None) -> Array:
    """Dot product of ``query`` with every embedding (weight tying).

    Args:
      query: array whose last axis has size ``features``.
      out_sharding: sharding of the result (explicit sharding mode).

    Returns:
      An array of shape ``query.shape[:-1] + (num_embeddings,)``.
    """
    query, table = self.promote_dtype(
      (query, self.embedding[...]), dtype=self.dtype
    )
    return jnp.dot(query, table.T, out_sharding=out_sharding)


def __getattr__(name):
  # Flax keeps the convolutions in this module too.
  if name in ('Conv', 'ConvTranspose', 'canonicalize_padding'):
    from flax.layers.nnx import conv

    return getattr(conv, name)
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
