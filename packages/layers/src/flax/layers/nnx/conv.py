"""Convolutions for NNX: ``Conv`` and ``ConvTranspose`` (channels last)."""

from __future__ import annotations

import functools
import typing as tp
from types import MappingProxyType

import jax
import jax.numpy as jnp

from flax import nnx
from flax.core import jax_defaults
from flax.layers import linear as _math
from flax.layers.nnx import dtypes
from flax.layers.nnx._utils import init_kernel_bias
from flax.layers.nnx._utils import keep_args
from flax.layers.nnx._utils import optional_data
from flax.layers.nnx.linear import default_bias_init
from flax.layers.nnx.linear import default_kernel_init

Array = jax.Array
PaddingLike = str | int | tp.Sequence[int | tuple[int, int]]
canonicalize_padding = _math.canonicalize_padding

_EMPTY = MappingProxyType({})


def _check_config(args, kernel_shape):
  """Validates a convolution's configuration (``args``: its constructor's
  ``locals()``) when it is built: the mask shape and the stride, padding and
  dilation formats (the canonical spec is cached, see :func:`_spec`)."""
  _math.check_mask(args['mask'], kernel_shape)
  _spec(args)


def _spec(conv):
  """The canonical :class:`ConvSpec` of a layer (or of its constructor's
  arguments, a mapping); ``conv_spec`` caches it per configuration."""
  get = conv.get if isinstance(conv, dict) else conv.__dict__.get
  return _math.conv_spec(
    get('kernel_size'),
    get('strides'),
    get('padding'),
    get('input_dilation', 1),
    get('kernel_dilation'),
  )


def _init_params(module, args, kernel_shape):
  """Keeps ``kernel_shape``, creates ``kernel`` and ``bias``; the other
  constructor arguments are kept by :func:`init_kernel_bias`."""
  module.kernel_shape = kernel_shape
  bias_shape = (args['out_features'],) if args['use_bias'] else None
  init_kernel_bias(
    module, args, kernel_shape, bias_shape, mask=optional_data(args['mask'])
  )


def _params(module, inputs):
  """The (masked) kernel and the bias, promoted with ``inputs``."""
  kernel = module.kernel[...]
  if module.mask is not None:
    kernel = kernel * module.mask
  bias = module.bias[...] if module.bias is not None else None
  return module.promote_dtype((inputs, kernel, bias), dtype=module.dtype)


class Conv(nnx.Module):
  """A convolution over channels-last inputs ``(*batch, *spatial, C)``.

  Params: ``kernel (*kernel_size, in_features // feature_group_count,
  out_features)`` and ``bias (out_features,)``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.Conv(3, 4, kernel_size=(3, 3), rngs=nnx.Rngs(0))
  >>> layer.kernel.shape
  (3, 3, 3, 4)
  >>> layer(jnp.ones((1, 8, 8, 3))).shape
  (1, 8, 8, 4)

  Args:
    in_features: number of input channels.
    out_features: number of output channels.
    kernel_size: int (1-D) or sequence of spatial kernel sizes.
    strides: int or sequence of strides (default 1).
    padding: ``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, ``'CAUSAL'`` (1-D),
      an int, or a sequence of ints or ``(low, high)`` pairs.
    input_dilation: int or sequence, dilation of the inputs.
    kernel_dilation: int or sequence, dilation of the kernel.
    feature_group_count: grouped convolution.
    use_bias: whether to add a bias.
    mask: optional array multiplied into the kernel (e.g. for masked
      convolutions); must have the kernel's shape.
    dtype: dtype of the computation.
    param_dtype: dtype passed to the initializers.
    precision: numerical precision.
    kernel_init: initializer of the kernel.
    bias_init: initializer of the bias.
    conv_general_dilated: the convolution function.
    promote_dtype: dtype promotion function.
    preferred_element_type: accumulation dtype.
    rngs: rng key container.
    kernel_metadata: extra metadata of the kernel.
    bias_metadata: extra metadata of the bias.
  """

  def __init__(
    self,
    in_features: int,
    out_features: int,
    kernel_size: _math.Size,
    strides: int | tp.Sequence[int] = 1,
    *,
    padding: PaddingLike = 'SAME',
    input_dilation: int | tp.Sequence[int] = 1,
    kernel_dilation: int | tp.Sequence[int] = 1,
    feature_group_count: int = 1,
    use_bias: bool = True,
    mask: Array | None = None,
    dtype=None,
    param_dtype=jnp.float32,
    precision=None,
    kernel_init=default_kernel_init,
    bias_init=default_bias_init,
    conv_general_dilated=jax_defaults.conv_general_dilated,
    promote_dtype=dtypes.promote_dtype,
    preferred_element_type=None,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    kernel_size = _math.conv_kernel_size(kernel_size)
    args = locals()
    kernel_shape = _math.conv_kernel_shape(
      kernel_size, in_features, out_features, feature_group_count
    )
    _check_config(args, kernel_shape)
    _init_params(self, args, kernel_shape)

  def __call__(self, inputs: Array, out_sharding=None) -> Array:
    """Convolves ``inputs`` (any number of batch axes, zero included).

    Args:
      inputs: ``(*batch, *spatial, in_features)``.
      out_sharding: sharding of the result (explicit sharding mode).

    Returns:
      ``(*batch, *out_spatial, out_features)``.
    """
    inputs, kernel, bias = _params(self, inputs)
    # ``out_sharding`` always, ``preferred_element_type`` when set.
    extra = {'out_sharding': out_sharding}
    if self.preferred_element_type is not None:
      extra['preferred_element_type'] = self.preferred_element_type
    conv_fn = functools.partial(self.conv_general_dilated, **extra)
    return _math.conv(
      inputs,
      kernel,
      bias,
      _spec(self),
      feature_group_count=self.feature_group_count,
      precision=self.precision,
      conv_general_dilated=conv_fn,
    )


class ConvTranspose(nnx.Module):
  """A transposed ("fractionally strided") convolution, ``lax.conv_transpose``.

  Params: ``kernel (*kernel_size, in_features, out_features)`` (or
  ``(*kernel_size, out_features, in_features)`` with ``transpose_kernel``)
  and ``bias (out_features,)``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.ConvTranspose(3, 4, kernel_size=(3, 3), strides=2,
  ...                           rngs=nnx.Rngs(0))
  >>> layer(jnp.ones((1, 8, 8, 3))).shape
  (1, 16, 16, 4)

  Args:
    in_features: number of input channels.
    out_features: number of output channels.
    kernel_size: int (1-D) or sequence of spatial kernel sizes.
    strides: int or sequence of strides (default 1).
    padding: ``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, an int or pairs.
    kernel_dilation: int or sequence, dilation of the kernel.
    use_bias: whether to add a bias.
    mask: optional array multiplied into the kernel.
    dtype: dtype of the computation.
    param_dtype: dtype passed to the initializers.
    precision: numerical precision.
    kernel_init: initializer of the kernel.
    bias_init: initializer of the bias.
    transpose_kernel: flip the spatial axes and swap the feature axes of
      the kernel (the gradient of ``Conv``).
    promote_dtype: dtype promotion function.
    preferred_element_type: accumulation dtype of the convolution.
    rngs: rng key container.
    kernel_metadata: extra metadata of the kernel.
    bias_metadata: extra metadata of the bias.
  """

  def __init__(
    self,
    in_features: int,
    out_features: int,
    kernel_size: _math.Size,
    strides: _math.OptSize = None,
    *,
    padding: PaddingLike = 'SAME',
    kernel_dilation: _math.OptSize = None,
    use_bias: bool = True,
    mask: Array | None = None,
    dtype=None,
    param_dtype=jnp.float32,
    precision=None,
    kernel_init=default_kernel_init,
    bias_init=default_bias_init,
    transpose_kernel: bool = False,
    promote_dtype=dtypes.promote_dtype,
    preferred_element_type=None,
    rngs: nnx.Rngs,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    kernel_size = _math.conv_kernel_size(kernel_size)
    args = locals()
    kernel_shape = _math.conv_transpose_kernel_shape(
      kernel_size, in_features, out_features, transpose_kernel
    )
    _check_config(args, kernel_shape)
    # The settings come first here, then ``kernel_shape`` and the params.
    self.kernel_size = kernel_size
    keep_args(self, args)
    _init_params(self, args, kernel_shape)

  def __call__(self, inputs: Array) -> Array:
    """Applies the transposed convolution."""
    inputs, kernel, bias = _params(self, inputs)
    return _math.conv_transpose(
      inputs,
      kernel,
      bias,
      _spec(self),
      transpose_kernel=self.transpose_kernel,
      precision=self.precision,
      preferred_element_type=self.preferred_element_type,
    )
