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
  """A linear transformation applied over the last dimension of the input.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Dense(features=4)
    >>> params = layer.init(jax.random.key(0), jnp.ones((1, 3)))
    >>> jax.tree_util.tree_map(jnp.shape, params)
    {'params': {'bias': (4,), 'kernel': (3, 4)}}

  Attributes:
    features: the number of output features.
    use_bias: whether to add a bias to the output (default: True).
    dtype: the dtype of the computation (default: infer from input and
      params).
    param_dtype: the dtype passed to parameter initializers (default:
      float32).
    precision: numerical precision of the computation, see
      ``jax.lax.Precision``.
    kernel_init: initializer function for the weight matrix.
    bias_init: initializer function for the bias.
    promote_dtype: function promoting the inputs and parameters to the
      computation dtype, called as ``promote_dtype(*arrays, dtype=dtype)``.
    dot_general: replacement for ``lax.dot_general``.
    dot_general_cls: a class whose instances replace ``lax.dot_general``.
  """

  features: int
  use_bias: bool = True
  dtype: Dtype | None = None
  param_dtype: Dtype = jnp.float32
  precision: PrecisionLike = None
  kernel_init: Initializer = default_kernel_init
  bias_init: Initializer = initializers.zeros_init()
  promote_dtype: PromoteDtypeFn = promote_dtype
  dot_general: Any = None
  dot_general_cls: Any = None

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Applies a linear transformation to the inputs along the last axis.

    Args:
      inputs: the nd-array to be transformed.

    Returns:
      The transformed input.
    """
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
  """A linear transformation with flexible axes.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.DenseGeneral(features=(4, 5), axis=-1)
    >>> params = layer.init(jax.random.key(0), jnp.ones((1, 3)))
    >>> jax.tree_util.tree_map(jnp.shape, params)
    {'params': {'bias': (4, 5), 'kernel': (3, 4, 5)}}

  Attributes:
    features: int or tuple with number of output features.
    axis: int or tuple with axes to apply the transformation on.
    batch_dims: leading axes shared by the input and the kernel (they must
      be ``0, 1, ..., n-1``).
    use_bias: whether to add a bias to the output (default: True).
    dtype: the dtype of the computation (default: infer from input and
      params).
    param_dtype: the dtype passed to parameter initializers.
    kernel_init: initializer function for the weight matrix (called on the
      flattened 2-D kernel shape).
    bias_init: initializer function for the bias.
    precision: numerical precision of the computation.
    promote_dtype: function promoting the inputs and parameters to the
      computation dtype, called as ``promote_dtype(*arrays, dtype=dtype)``.
    dot_general: replacement for ``lax.dot_general``.
    dot_general_cls: a class whose instances replace ``lax.dot_general``.
  """

  features: int | Sequence[int]
  axis: int | Sequence[int] = -1
  batch_dims: Sequence[int] = ()
  use_bias: bool = True
  dtype: Dtype | None = None
  param_dtype: Dtype = jnp.float32
  kernel_init: Initializer = default_kernel_init
  bias_init: Initializer = initializers.zeros_init()
  precision: PrecisionLike = None
  promote_dtype: PromoteDtypeFn = promote_dtype
  dot_general: Any = None
  dot_general_cls: Any = None

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Applies a linear transformation to the inputs along multiple axes.

    Args:
      inputs: the nd-array to be transformed.

    Returns:
      The transformed input.
    """
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
  """An einsum transformation with learnable kernel and bias.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Einsum((5, 6, 7), 'abc,cde->abde')
    >>> variables = layer.init(jax.random.key(0), jnp.ones((3, 4, 5)))
    >>> jax.tree_util.tree_map(jnp.shape, variables)
    {'params': {'bias': (6, 7), 'kernel': (5, 6, 7)}}

  Attributes:
    shape: the shape of the kernel.
    einsum_str: an explicit einsum equation with two operands (input,
      kernel); may be given at call time instead.
    use_bias: whether to add a bias over the kernel axes kept in the output.
    dtype: the dtype of the computation.
    param_dtype: the dtype passed to parameter initializers.
    precision: numerical precision of the computation.
    kernel_init: initializer function for the kernel.
    bias_init: initializer function for the bias.
    promote_dtype: function promoting the inputs and parameters to the
      computation dtype, called as ``promote_dtype(*arrays, dtype=dtype)``.
    preferred_element_type: accumulation dtype passed to ``jnp.einsum``.
  """

  shape: Shape
  einsum_str: str | None = None
  use_bias: bool = True
  dtype: Dtype | None = None
  param_dtype: Dtype = jnp.float32
  precision: PrecisionLike = None
  kernel_init: Initializer = default_kernel_init
  bias_init: Initializer = initializers.zeros_init()
  promote_dtype: PromoteDtypeFn = promote_dtype
  preferred_element_type: Dtype | None = None

  @compact
  def __call__(self, inputs: Array, einsum_str: str | None = None) -> Array:
    """Applies the einsum to ``inputs`` and the kernel.

    Args:
      inputs: the input array.
      einsum_str: the equation, if not given as an attribute.

    Returns:
      The transformed input.
    """
    einsum_str = merge_param('einsum_str', self.einsum_str, einsum_str)
    einsum_str = linear.check_einsum_str(einsum_str)
    kernel = self.param(
      'kernel', self.kernel_init, tuple(self.shape), self.param_dtype
    )
    if self.use_bias:
      bias_shape, broadcast = linear.einsum_bias_shape(
        einsum_str, inputs.ndim, kernel.shape
      )
      bias = self.param('bias', self.bias_init, bias_shape, self.param_dtype)
    else:
      bias = None
    inputs, kernel, bias = self.promote_dtype(
      inputs, kernel, bias, dtype=self.dtype
    )
    y = jnp.einsum(
      einsum_str,
      inputs,
      kernel,
      precision=self.precision,
      preferred_element_type=self.preferred_element_type,
    )
    if bias is not None:
      y += jnp.reshape(bias, broadcast)
    return y


class _Conv(Module):
  """Shared fields and call of Conv and ConvLocal."""

  features: int
  kernel_size: int | Sequence[int]
  strides: None | int | Sequence[int] = 1
  padding: PaddingLike = 'SAME'
  input_dilation: None | int | Sequence[int] = 1
  kernel_dilation: None | int | Sequence[int] = 1
  feature_group_count: int = 1
  use_bias: bool = True
  mask: Array | None = None
  dtype: Dtype | None = None
  param_dtype: Dtype = jnp.float32
  precision: PrecisionLike = None
  kernel_init: Initializer = default_kernel_init
  bias_init: Initializer = initializers.zeros_init()
  promote_dtype: PromoteDtypeFn = promote_dtype
  conv_general_dilated: Any = None
  conv_general_dilated_cls: Any = None

  @property
  def shared_weights(self) -> bool:
    """Whether one kernel is shared by every position (Conv: yes)."""
    return True

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Applies a (potentially unshared) convolution to the inputs.

    Args:
      inputs: input data with dimensions ``(*batch_dims, spatial_dims...,
        features)``. This is the channels-last convention. If the input has
        more than one batch dimension, all of them are folded into one and
        restored afterwards; an input without batch dimension gets one
        temporarily.

    Returns:
      The convolved data.
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
  """Convolution Module wrapping ``lax.conv_general_dilated``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Conv(features=4, kernel_size=(3,), padding='VALID')
    >>> x = jnp.ones((1, 8, 3))
    >>> variables = layer.init(jax.random.key(0), x)
    >>> jax.tree_util.tree_map(jnp.shape, variables)
    {'params': {'bias': (4,), 'kernel': (3, 3, 4)}}
    >>> layer.apply(variables, x).shape
    (1, 6, 4)

  Attributes:
    features: number of convolution filters.
    kernel_size: shape of the convolutional kernel (an int means 1-D).
    strides: an integer or a sequence of ``n`` integers, the inter-window
      strides (default: 1).
    padding: ``'SAME'``, ``'VALID'``, ``'CIRCULAR'`` (periodic boundary),
      ``'CAUSAL'`` (1-D only), an int, or a sequence of ``n`` ints or
      ``(low, high)`` pairs.
    input_dilation: an integer or a sequence of ``n`` integers, the input
      dilation (transposed convolution when > 1).
    kernel_dilation: an integer or a sequence of ``n`` integers, the kernel
      dilation (atrous convolution).
    feature_group_count: if specified divides the input features into
      groups.
    use_bias: whether to add a bias to the output (default: True).
    mask: optional mask multiplied into the kernel (kernel-shaped).
    dtype: the dtype of the computation (default: infer from input and
      params).
    param_dtype: the dtype passed to parameter initializers.
    precision: numerical precision of the computation.
    kernel_init: initializer for the convolutional kernel.
    bias_init: initializer for the bias.
    promote_dtype: function promoting the inputs and parameters to the
      computation dtype, called as ``promote_dtype(*arrays, dtype=dtype)``.
    conv_general_dilated: replacement for ``lax.conv_general_dilated``.
    conv_general_dilated_cls: a class whose instances replace it.
  """

  @property
  def shared_weights(self) -> bool:
    return True


class ConvLocal(_Conv):
  """Local convolution (unshared weights) over the spatial dimensions.

  Same attributes as :class:`Conv`. The kernel has one filter per output
  position: ``(*out_spatial, prod(kernel_size) * in_features, features)``,
  and the bias is ``(*out_spatial, features)``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.ConvLocal(features=4, kernel_size=(3,), padding='VALID')
    >>> variables = layer.init(jax.random.key(0), jnp.ones((1, 8, 3)))
    >>> jax.tree_util.tree_map(jnp.shape, variables)
    {'params': {'bias': (6, 4), 'kernel': (6, 9, 4)}}
  """

  @property
  def shared_weights(self) -> bool:
    return False


class ConvTranspose(Module):
  """Transposed convolution Module wrapping ``lax.conv_transpose``.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.ConvTranspose(features=4, kernel_size=(3,), strides=(2,))
    >>> x = jnp.ones((1, 8, 3))
    >>> variables = layer.init(jax.random.key(0), x)
    >>> jax.tree_util.tree_map(jnp.shape, variables)
    {'params': {'bias': (4,), 'kernel': (3, 3, 4)}}
    >>> layer.apply(variables, x).shape
    (1, 16, 4)

  Attributes:
    features: number of convolution filters.
    kernel_size: shape of the convolutional kernel (an int means 1-D).
    strides: a sequence of ``n`` integers, the inter-window strides
      (default: 1).
    padding: ``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, an int, or a sequence
      of ``n`` ``(low, high)`` pairs.
    kernel_dilation: a sequence of ``n`` integers, the kernel dilation.
    use_bias: whether to add a bias to the output (default: True).
    mask: optional mask multiplied into the kernel.
    dtype: the dtype of the computation.
    param_dtype: the dtype passed to parameter initializers.
    precision: numerical precision of the computation.
    kernel_init: initializer for the convolutional kernel.
    bias_init: initializer for the bias.
    transpose_kernel: if True flips spatial axes and swaps the input/output
      channel axes of the kernel (the gradient of ``Conv``).
    promote_dtype: function promoting the inputs and parameters to the
      computation dtype, called as ``promote_dtype(*arrays, dtype=dtype)``.
    preferred_element_type: accumulation dtype of the convolution.
  """

  features: int
  kernel_size: int | Sequence[int]
  strides: Sequence[int] | None = None
  padding: PaddingLike = 'SAME'
  kernel_dilation: Sequence[int] | None = None
  use_bias: bool = True
  mask: Array | None = None
  dtype: Dtype | None = None
  param_dtype: Dtype = jnp.float32
  precision: PrecisionLike = None
  kernel_init: Initializer = default_kernel_init
  bias_init: Initializer = initializers.zeros_init()
  transpose_kernel: bool = False
  promote_dtype: PromoteDtypeFn = promote_dtype
  preferred_element_type: Dtype | None = None

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Applies a transposed convolution to the inputs.

    Args:
      inputs: input data with dimensions ``(*batch_dims, spatial_dims...,
        features)``.

    Returns:
      The convolved data.
    """
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
  """Embedding Module: integer ids to vectors.

  A parameterized function from integers ``[0, num_embeddings)`` to
  ``features``-dimensional vectors. ``attend`` computes the dot product of
  a query with every embedding (for weight tying).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Embed(num_embeddings=5, features=3)
    >>> variables = layer.init(jax.random.key(0), jnp.arange(4))
    >>> jax.tree_util.tree_map(jnp.shape, variables)
    {'params': {'embedding': (5, 3)}}
    >>> layer.apply(variables, jnp.array([[0, 4]])).shape
    (1, 2, 3)

  Attributes:
    num_embeddings: number of embeddings / vocab size.
    features: number of feature dimensions for each embedding.
    dtype: the dtype of the embedding vectors (default: same as
      embedding).
    param_dtype: the dtype passed to parameter initializers.
    promote_dtype: function promoting the inputs and parameters to the
      computation dtype, called as ``promote_dtype(*arrays, dtype=dtype)``.
    embedding_init: embedding initializer.
  """

  num_embeddings: int
  features: int
  dtype: Dtype | None = None
  param_dtype: Dtype = jnp.float32
  embedding_init: Initializer = default_embed_init
  promote_dtype: PromoteDtypeFn = promote_dtype

  def setup(self):
    self.embedding = self.param(
      'embedding',
      self.embedding_init,
      (self.num_embeddings, self.features),
      self.param_dtype,
    )

  def __call__(self, inputs: Array) -> Array:
    """Embeds the inputs along the last dimension.

    Args:
      inputs: input data, all dimensions are considered batch dimensions.
        Values in the input array must be integers.

    Returns:
      Output which is embedded input data. The output shape follows the
      input, with an additional ``features`` dimension appended.
    """
    # Only a float ``dtype`` casts the table; ids never promote it.
    (table,) = self.promote_dtype(
      self.embedding, dtype=self.dtype, inexact=False
    )
    return linear.embed_lookup(table, inputs)

  def attend(self, query: Array) -> Array:
    """Attend over the embedding using a query array.

    Args:
      query: array with last dimension equal the feature depth ``features``
        of the embedding.

    Returns:
      An array with final dim ``num_embeddings`` corresponding to the
      batched inner-product of the array of query vectors against each
      embedding. Commonly used for weight-sharing between embeddings and
      logit transform in NLP models.
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
