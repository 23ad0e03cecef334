"""Linen linear layers: Dense, DenseGeneral, Einsum, Conv, ConvTranspose,
ConvLocal and Embed.

Parameter names, shapes and default initializers are Flax's (``kernel``
then ``bias``; ``lecun_normal`` kernels, zero biases).
"""

import math
from collections.abc import Sequence
from typing import Any, Protocol

import jax.numpy as jnp

from flax.layers import initializers, linear
from flax.layers.dtypes import promote_dtype
from flax.layers.linear import PaddingLike
from flax.layers.linear import canonicalize_padding as canonicalize_padding
from flax.layers.dtypes import F32, MaybeDtype
from flax.layers.initializers import zeros_init
from flax.linen import Module, compact, merge_param

Array = Any
Dtype = Any
Initializer = initializers.Initializer
PrecisionLike = Any
Shape = Sequence[int]

default_kernel_init = initializers.default_kernel_init
default_embed_init = initializers.default_embed_init
LaxPadding = linear.LaxPadding

# Helpers that code built on Linen imports from this module by name.
_canonicalize_tuple = linear.canonicalize_tuple
_conv_dimension_numbers = linear.conv_dimension_numbers


def _normalize_axes(axes: tuple[int, ...], ndim: int) -> tuple[int, ...]:
  """Non-negative, sorted axes (a negative axis counts from ``ndim``)."""
  return tuple(sorted(linear.normalize_axes(axes, ndim)))


class PromoteDtypeFn(Protocol):
  """What a Linen layer's ``promote_dtype`` field is called as.

  It takes the arrays (``None`` passing through), the target ``dtype`` (or
  None to promote them together) and ``inexact``, and returns them cast.
  """

  def __call__(
    self, *args: Array | None, dtype: Any = None, inexact: bool = True
  ) -> list[Array | None]: ...


def _params(
  mdl,
  inputs,
  kernel_shape,
  bias_shape,
  *,
  kernel_init=None,
  bias_init=None,
  mask=None,
):
  """Creates ``kernel`` then, with ``use_bias``, ``bias``, and promotes.

  Args:
    mdl: the layer (its ``kernel_init``, ``bias_init``, ``use_bias``,
      ``param_dtype`` and ``dtype`` are used).
    inputs: the input, promoted with the params.
    kernel_shape: shape of ``kernel``.
    bias_shape: shape of ``bias``.
    kernel_init: the kernel initializer (default: ``mdl.kernel_init``).
    bias_init: the bias initializer (default: ``mdl.bias_init``).
    mask: multiplied into the kernel, or None.

  Returns:
    ``(inputs, kernel, bias)`` promoted to ``dtype`` (bias None without
    ``use_bias``).
  """
  if kernel_init is None:
    kernel_init = mdl.kernel_init
  if bias_init is None:
    bias_init = mdl.bias_init
  kernel = mdl.param('kernel', kernel_init, kernel_shape, mdl.param_dtype)
  if mask is not None:
    kernel *= mask
  bias = None
  if mdl.use_bias:
    bias = mdl.param('bias', bias_init, bias_shape, mdl.param_dtype)
  return mdl.promote_dtype(inputs, kernel, bias, dtype=mdl.dtype)


def _dot_general(dot_general, dot_general_cls):
  if dot_general_cls is not None:
    return dot_general_cls()
  return dot_general


class Dense(Module):
  """``inputs @ kernel + bias`` over the last input axis.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> v = nn.Dense(2).init(jax.random.key(1), jnp.zeros((5, 7)))
    >>> v['params']['kernel'].shape, v['params']['bias'].shape
    ((7, 2), (2,))
  """

  features: int
  """Size of the output's last axis."""
  use_bias: bool = True
  """Add a learned ``bias`` (default True)."""
  dtype: MaybeDtype = None
  """Computation dtype (None: promoted from inputs and params)."""
  param_dtype: Dtype = F32
  """Dtype the parameters are created in."""
  precision: PrecisionLike = None
  """``jax.lax.Precision`` of the matmul."""
  kernel_init: Initializer = default_kernel_init
  """Creates ``kernel``."""
  bias_init: Initializer = zeros_init()
  """Creates ``bias``."""
  promote_dtype: PromoteDtypeFn = promote_dtype
  """Casts inputs and params together (see :class:`PromoteDtypeFn`)."""
  dot_general: Any = None
  """Stands in for ``lax.dot_general`` when given."""
  dot_general_cls: Any = None
  """Built once per call; its instance stands in for ``lax.dot_general``."""

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Maps the last axis of ``inputs`` to ``features`` outputs."""
    inputs, kernel, bias = _params(
      self, inputs, (jnp.shape(inputs)[-1], self.features), (self.features,)
    )
    return linear.dense(
      inputs,
      kernel,
      bias,
      precision=self.precision,
      dot_general=_dot_general(self.dot_general, self.dot_general_cls),
    )


class DenseGeneral(Module):
  """A dense map contracting any input axes into any number of outputs.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.DenseGeneral((2, 3), axis=(-2, -1))
    >>> v = layer.init(jax.random.key(1), jnp.zeros((4, 5, 6)))
    >>> v['params']['kernel'].shape
    (5, 6, 2, 3)
  """

  features: int | Sequence[int]
  """Output axes' sizes (an int or a tuple)."""
  axis: int | Sequence[int] = -1
  """Input axes contracted with the kernel."""
  batch_dims: Sequence[int] = ()
  """Leading axes shared by input and kernel (``0 .. n-1``)."""
  use_bias: bool = True
  """Add a learned ``bias`` (default True)."""
  dtype: MaybeDtype = None
  """Computation dtype (None: promoted from inputs and params)."""
  param_dtype: Dtype = F32
  """Dtype the parameters are created in."""
  kernel_init: Initializer = default_kernel_init
  """Creates ``kernel`` (called with the flattened 2-D shape)."""
  bias_init: Initializer = zeros_init()
  """Creates ``bias``."""
  precision: PrecisionLike = None
  """``jax.lax.Precision`` of the contraction."""
  promote_dtype: PromoteDtypeFn = promote_dtype
  """Casts inputs and params together (see :class:`PromoteDtypeFn`)."""
  dot_general: Any = None
  """Stands in for ``lax.dot_general`` when given."""
  dot_general_cls: Any = None
  """Built once per call; its instance stands in for ``lax.dot_general``."""

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Contracts ``axis`` of ``inputs`` with the kernel."""
    spec = linear.dense_general_spec(
      inputs.shape, self.features, self.axis, self.batch_dims
    )
    n_batch, n_features = spec.n_batch, len(spec.features)
    inputs, kernel, bias = _params(
      self,
      inputs,
      spec.kernel_shape,
      spec.bias_shape,
      kernel_init=linear.flat_kernel_init(
        self.kernel_init, n_batch, spec.n_axis, n_features
      ),
      bias_init=linear.flat_bias_init(self.bias_init, n_batch, n_features),
    )
    return linear.dense_general(
      inputs,
      kernel,
      bias,
      spec,
      precision=self.precision,
      dot_general=_dot_general(self.dot_general, self.dot_general_cls),
    )


class Einsum(Module):
  """A learned kernel applied with an einsum equation ``'in,kernel->out'``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Einsum((3, 2), 'nk,kf->nf')
    >>> v = layer.init(jax.random.key(1), jnp.zeros((4, 3)))
    >>> v['params']['kernel'].shape, v['params']['bias'].shape
    ((3, 2), (2,))
  """

  shape: Shape
  """The kernel's shape."""
  einsum_str: str | None = None
  """The equation (or pass it to ``__call__``)."""
  use_bias: bool = True
  """Add a ``bias`` over the kernel axes the output keeps."""
  dtype: MaybeDtype = None
  """Computation dtype (None: promoted from inputs and params)."""
  param_dtype: Dtype = F32
  """Dtype the parameters are created in."""
  precision: PrecisionLike = None
  """``jax.lax.Precision`` of the einsum."""
  kernel_init: Initializer = default_kernel_init
  """Creates ``kernel``."""
  bias_init: Initializer = zeros_init()
  """Creates ``bias``."""
  promote_dtype: PromoteDtypeFn = promote_dtype
  """Casts inputs and params together (see :class:`PromoteDtypeFn`)."""
  preferred_element_type: Dtype | None = None
  """Accumulation dtype handed to ``jnp.einsum``."""

  @compact
  def __call__(self, inputs: Array, einsum_str: str | None = None) -> Array:
    """Evaluates the equation (the field's, or ``einsum_str``) on inputs."""
    equation = linear.check_einsum_str(
      merge_param('einsum_str', self.einsum_str, einsum_str)
    )
    kernel = self.param(
      'kernel', self.kernel_init, tuple(self.shape), self.param_dtype
    )
    bias = broadcast = None
    if self.use_bias:
      bias_shape, broadcast = linear.einsum_bias_shape(
        equation, inputs.ndim, kernel.shape
      )
      bias = self.param('bias', self.bias_init, bias_shape, self.param_dtype)
    promoted = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)
    return linear.einsum_with_bias(
      equation,
      *promoted,
      broadcast,
      precision=self.precision,
      preferred_element_type=self.preferred_element_type,
    )


class _Conv(Module):
  """Fields and call shared by Conv (one kernel) and ConvLocal (per site)."""

  features: int
  """Number of output channels."""
  kernel_size: linear.Size
  """Window shape (an int: a 1-D window)."""
  strides: linear.OptSize = 1
  """Step between windows, one per spatial axis or one for all."""
  padding: PaddingLike = 'SAME'
  """``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, ``'CAUSAL'``, ints or pairs."""
  input_dilation: linear.OptSize = 1
  """Gaps inserted between input elements."""
  kernel_dilation: linear.OptSize = 1
  """Gaps inserted between kernel taps (atrous)."""
  feature_group_count: int = 1
  """Splits the input channels into this many groups."""
  use_bias: bool = True
  """Add a learned ``bias`` (default True)."""
  mask: Array | None = None
  """Multiplied into the kernel (kernel-shaped), or None."""
  dtype: MaybeDtype = None
  """Computation dtype (None: promoted from inputs and params)."""
  param_dtype: Dtype = F32
  """Dtype the parameters are created in."""
  precision: PrecisionLike = None
  """``jax.lax.Precision`` of the convolution."""
  kernel_init: Initializer = default_kernel_init
  """Creates ``kernel``."""
  bias_init: Initializer = zeros_init()
  """Creates ``bias``."""
  promote_dtype: PromoteDtypeFn = promote_dtype
  """Casts inputs and params together (see :class:`PromoteDtypeFn`)."""
  conv_general_dilated: Any = None
  """Stands in for ``lax.conv_general_dilated`` when given."""
  conv_general_dilated_cls: Any = None
  """Built once per call; its instance stands in for the convolution."""

  @property
  def shared_weights(self) -> bool:
    """Whether one kernel is shared by every position (Conv: yes)."""
    return True

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Convolves channels-last ``inputs`` (``(*batch, *spatial, c)``).

    Several batch axes are folded into one for the convolution, and an
    input with no batch axis gets one for the duration of the call.
    """
    spec = linear.conv_spec(
      self.kernel_size,
      self.strides,
      self.padding,
      self.input_dilation,
      self.kernel_dilation,
    )
    in_features = jnp.shape(inputs)[-1]
    if self.shared_weights:
      kernel_shape = linear.conv_kernel_shape(
        spec.kernel_size, in_features, self.features, self.feature_group_count
      )
    else:
      if self.feature_group_count != 1:
        raise ValueError(
          '`lax.conv_general_dilated_local` does not support '
          f'`feature_group_count != 1`, got `{self.feature_group_count}`; '
          'use ConvLocal with feature_group_count=1, or Conv for grouped '
          'convolutions.'
        )
      out_spatial = linear.conv_local_output_spatial(
        inputs.shape, self.features, spec
      )
      kernel_shape = out_spatial + (
        math.prod(spec.kernel_size) * in_features,
        self.features,
      )
    linear.check_mask(self.mask, kernel_shape)
    if self.shared_weights:
      bias_shape = (self.features,)
    else:
      bias_shape = out_spatial + (self.features,)
    inputs, kernel, bias = _params(
      self, inputs, kernel_shape, bias_shape, mask=self.mask
    )
    if not self.shared_weights:
      return linear.conv_local(
        inputs, kernel, bias, spec, precision=self.precision
      )
    if self.conv_general_dilated_cls is not None:
      conv_fn = self.conv_general_dilated_cls()
    else:
      conv_fn = self.conv_general_dilated
    return linear.conv(
      inputs,
      kernel,
      bias,
      spec,
      feature_group_count=self.feature_group_count,
      precision=self.precision,
      conv_general_dilated=conv_fn,
    )


class Conv(_Conv):
  """An N-D convolution over channels-last inputs (one shared kernel).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Conv(2, kernel_size=(3, 3), padding='VALID')
    >>> x = jnp.zeros((1, 6, 6, 4))
    >>> v = layer.init(jax.random.key(1), x)
    >>> v['params']['kernel'].shape, layer.apply(v, x).shape
    ((3, 3, 4, 2), (1, 4, 4, 2))
  """

  @property
  def shared_weights(self) -> bool:
    return True


class ConvLocal(_Conv):
  """A convolution whose filters differ at every output position.

  Same fields as :class:`Conv`. The kernel is
  ``(*out_spatial, prod(kernel_size) * in_features, features)`` and the
  bias ``(*out_spatial, features)``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.ConvLocal(2, kernel_size=(2,), padding='VALID')
    >>> v = layer.init(jax.random.key(1), jnp.zeros((1, 5, 3)))
    >>> v['params']['kernel'].shape, v['params']['bias'].shape
    ((4, 6, 2), (4, 2))
  """

  @property
  def shared_weights(self) -> bool:
    return False


class ConvTranspose(Module):
  """The transpose of a convolution (``lax.conv_transpose``).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.ConvTranspose(2, kernel_size=(2,), strides=(3,))
    >>> x = jnp.zeros((1, 4, 5))
    >>> v = layer.init(jax.random.key(1), x)
    >>> v['params']['kernel'].shape, layer.apply(v, x).shape
    ((2, 5, 2), (1, 12, 2))
  """

  features: int
  """Number of output channels."""
  kernel_size: linear.Size
  """Window shape (an int: a 1-D window)."""
  strides: linear.OptSizes = None
  """Upsampling step per spatial axis (default 1)."""
  padding: PaddingLike = 'SAME'
  """``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, an int or ``(lo, hi)`` pairs."""
  kernel_dilation: linear.OptSizes = None
  """Gaps inserted between kernel taps."""
  use_bias: bool = True
  """Add a learned ``bias`` (default True)."""
  mask: Array | None = None
  """Multiplied into the kernel, or None."""
  dtype: MaybeDtype = None
  """Computation dtype (None: promoted from inputs and params)."""
  param_dtype: Dtype = F32
  """Dtype the parameters are created in."""
  precision: PrecisionLike = None
  """``jax.lax.Precision`` of the convolution."""
  kernel_init: Initializer = default_kernel_init
  """Creates ``kernel``."""
  bias_init: Initializer = zeros_init()
  """Creates ``bias``."""
  transpose_kernel: bool = False
  """Flip the spatial axes and swap in/out channels (Conv's gradient)."""
  promote_dtype: PromoteDtypeFn = promote_dtype
  """Casts inputs and params together (see :class:`PromoteDtypeFn`)."""
  preferred_element_type: Dtype | None = None
  """Accumulation dtype of the convolution."""

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Applies the transposed convolution to ``(*batch, *spatial, c)``."""
    spec = linear.conv_spec(
      self.kernel_size, self.strides, self.padding, 1, self.kernel_dilation
    )
    kernel_shape = linear.conv_transpose_kernel_shape(
      spec.kernel_size,
      jnp.shape(inputs)[-1],
      self.features,
      self.transpose_kernel,
    )
    linear.check_mask(self.mask, kernel_shape)
    inputs, kernel, bias = _params(
      self, inputs, kernel_shape, (self.features,), mask=self.mask
    )
    return linear.conv_transpose(
      inputs,
      kernel,
      bias,
      spec,
      transpose_kernel=self.transpose_kernel,
      precision=self.precision,
      preferred_element_type=self.preferred_element_type,
    )


class Embed(Module):
  """A learned ``(num_embeddings, features)`` table looked up by id.

  ``attend`` scores a query against every row (for tied output logits).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Embed(10, 4)
    >>> v = layer.init(jax.random.key(1), jnp.array([3]))
    >>> layer.apply(v, jnp.array([[1, 2, 9]])).shape
    (1, 3, 4)
  """

  num_embeddings: int
  """Number of rows (the vocabulary size)."""
  features: int
  """Length of each row."""
  dtype: MaybeDtype = None
  """Dtype of the looked-up vectors (None: the table's)."""
  param_dtype: Dtype = F32
  """Dtype the table is created in."""
  embedding_init: Initializer = default_embed_init
  """Creates the table."""
  promote_dtype: PromoteDtypeFn = promote_dtype
  """Casts the table (and queries) (see :class:`PromoteDtypeFn`)."""

  def setup(self):
    table_shape = (self.num_embeddings, self.features)
    init, dtype = self.embedding_init, self.param_dtype
    self.embedding = self.param('embedding', init, table_shape, dtype)

  def __call__(self, inputs: Array) -> Array:
    """Looks up integer ``inputs``; the result adds a ``features`` axis."""
    # Only a float ``dtype`` casts the table; ids never promote it.
    (table,) = self.promote_dtype(
      self.embedding, dtype=self.dtype, inexact=False
    )
    return linear.embed_lookup(table, inputs)

  def attend(self, query: Array) -> Array:
    """Dot product of ``query`` (last axis ``features``) with every row.

    Returns an array whose last axis has ``num_embeddings`` scores, the
    usual way to share the table with the output projection.
    """
    query, table = self.promote_dtype(query, self.embedding, dtype=self.dtype)
    return linear.embed_attend(query, table)


__all__ = [
  'Conv',
  'ConvLocal',
  'ConvTranspose',
  'Dense',
  'DenseGeneral',
  'Einsum',
  'Embed',
  'PaddingLike',
  'PromoteDtypeFn',
  'canonicalize_padding',
  'default_embed_init',
  'default_kernel_init',
]
