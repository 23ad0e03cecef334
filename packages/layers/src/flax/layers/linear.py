"""Math of the linear layers: dense, general dot, einsum and convolutions.

The Linen and NNX classes create the parameters; the functions here do the
rest. Configuration that does not depend on the input values (padding,
strides, dilations) is canonicalized by :func:`conv_spec`, which is cached,
so a layer call does no repeated Python work.

>>> import jax.numpy as jnp
>>> from flax.layers.linear import canonicalize_padding
>>> canonicalize_padding(1, 2)
[(1, 1), (1, 1)]
"""

import functools
import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from flax.layers import initializers

Array = Any
PaddingLike = str | int | Sequence[int | tuple[int, int]]
LaxPadding = str | Sequence[tuple[int, int]]

default_kernel_init = initializers.default_kernel_init
default_bias_init = initializers.default_bias_init
default_embed_init = initializers.default_embed_init


Size = int | Sequence[int]
"""One int for every spatial axis, or one per axis."""
OptSize = None | int | Sequence[int]
"""A :data:`Size` that may be None (meaning 1)."""
OptSizes = Sequence[int] | None
"""One int per spatial axis, or None (meaning 1)."""


def canonicalize_tuple(x) -> tuple:
  """``int`` -> ``(int,)``; a sequence -> a tuple."""
  if isinstance(x, Sequence) and not isinstance(x, str):
    return tuple(x)
  return (x,)


def normalize_axes(axes: Sequence[int], ndim: int) -> tuple:
  """Makes negative axes positive (``jnp.ndim`` rules)."""
  return tuple(ax if ax >= 0 else ndim + ax for ax in axes)


# ---------------------------------------------------------------- dense --


def dense(inputs, kernel, bias=None, *, precision=None, dot_general=None):
  """``inputs @ kernel + bias`` over the last axis of ``inputs``.

  The product is ``dot_general`` if given, else ``jax.lax.dot_general``
  looked up when the layer runs (so a patched ``jax.lax.dot_general`` sees
  the caller's values, on every call).

  Args:
    inputs: ``(..., in_features)``.
    kernel: ``(in_features, features)``.
    bias: ``(features,)`` or None.
    precision: ``lax.Precision`` for the dot product.
    dot_general: replacement for ``lax.dot_general``.

  Returns:
    ``(..., features)``.
  """
  if dot_general is None:
    dot_general = lax.dot_general
  y = dot_general(
    inputs,
    kernel,
    (((inputs.ndim - 1,), (0,)), ((), ())),
    precision=precision,
  )
  if bias is not None:
    y = add_trailing(y, bias)
  return y


def add_trailing(y, b):
  """``y + b`` with ``b`` aligned to the trailing axes of ``y``.

  The explicit reshape keeps the addition valid when implicit rank
  promotion is an error (``JAX_NUMPY_RANK_PROMOTION=raise``).

  >>> import jax.numpy as jnp
  >>> add_trailing(jnp.zeros((2, 3)), jnp.arange(3.0)).tolist()
  [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
  """
  if b.ndim != y.ndim:
    b = lax.reshape(b, (1,) * (y.ndim - b.ndim) + b.shape)
  if y.dtype == b.dtype:
    # The primitive directly: no promotion to do, and no jnp dispatch.
    return lax.add(y, b)
  return y + b


class DenseGeneralSpec(NamedTuple):
  """Shapes and dimension numbers of a ``DenseGeneral`` call."""

  axis: tuple
  batch_dims: tuple
  features: tuple
  kernel_shape: tuple
  bias_shape: tuple
  bias_broadcast_shape: tuple
  dimension_numbers: tuple
  n_batch: int
  n_axis: int


def dense_general_spec(input_shape, features, axis=-1, batch_dims=()):
  """Computes the kernel/bias shapes and dot dimensions of DenseGeneral.

  Args:
    input_shape: shape of the input.
    features: int or tuple of output feature sizes.
    axis: int or tuple of input axes to contract.
    batch_dims: int or tuple of leading batch axes, shared by the kernel.

  Returns:
    A :class:`DenseGeneralSpec`.

  Raises:
    ValueError: if ``batch_dims`` are not ``0, 1, ..., n-1``.
  """
  return _dense_general_spec(
    tuple(input_shape),
    canonicalize_tuple(features),
    canonicalize_tuple(axis),
    canonicalize_tuple(batch_dims),
  )


@functools.lru_cache(maxsize=512)
def _dense_general_spec(input_shape, features, axis, batch_dims):
  ndim = len(input_shape)
  if batch_dims:
    if set(batch_dims) != set(range(max(batch_dims) + 1)):
      raise ValueError(
        f'batch_dims {batch_dims} must be consecutive leading '
        'dimensions starting from 0.'
      )
  # Kernel axes follow the input's axis order, whatever order they are
  # named in.
  axis = tuple(sorted(normalize_axes(axis, ndim)))
  batch_dims = tuple(sorted(normalize_axes(batch_dims, ndim)))
  n_batch, n_axis = len(batch_dims), len(axis)
  batch_shape = tuple(input_shape[ax] for ax in batch_dims)
  kernel_shape = batch_shape + tuple(input_shape[ax] for ax in axis) + features
  bias_broadcast_shape = (
    tuple(
      input_shape[ax] if ax in batch_dims else 1
      for ax in range(ndim)
      if ax not in axis
    )
    + features
  )
  contract = tuple(range(n_batch, n_batch + n_axis))
  dimension_numbers = ((axis, contract), (batch_dims, tuple(range(n_batch))))
  return DenseGeneralSpec(
    axis,
    batch_dims,
    features,
    kernel_shape,
    batch_shape + features,
    bias_broadcast_shape,
    dimension_numbers,
    n_batch,
    n_axis,
  )


def flat_kernel_init(init, n_batch: int, n_axis: int, n_features: int):
  """Wraps ``init`` to draw a DenseGeneral kernel on its 2-D flat shape.

  Flax draws the kernel as ``(prod(batch) * prod(in), prod(features))`` and
  reshapes it, which sets the fan-in/fan-out of variance-scaling
  initializers.
  """

  def kernel_init(key, shape, dtype=jnp.float32):
    flat = (
      int(
        np.prod(shape[:n_batch]) * np.prod(shape[n_batch : n_batch + n_axis])
      ),
      int(np.prod(shape[len(shape) - n_features :])),
    )
    return _reshape_init_output(init(key, flat, dtype), shape)

  return kernel_init


def flat_bias_init(init, n_batch: int, n_features: int):
  """Wraps ``init`` to draw a DenseGeneral bias on its 1-D flat shape."""

  def bias_init(key, shape, dtype=jnp.float32):
    flat = (
      int(np.prod(shape[:n_batch]) * np.prod(shape[len(shape) - n_features :])),
    )
    return _reshape_init_output(init(key, flat, dtype), shape)

  return bias_init


def _reshape_init_output(value, shape):
  # Boxed values (partitioning metadata) keep their box.
  if hasattr(value, 'unbox') and hasattr(value, 'replace_boxed'):
    return value.replace_boxed(jnp.reshape(value.unbox(), shape))
  return jnp.reshape(value, shape)


def dense_general(
  inputs,
  kernel,
  bias,
  spec: DenseGeneralSpec,
  *,
  precision=None,
  dot_general=None,
):
  """Applies a DenseGeneral contraction described by ``spec``."""
  dot_general = dot_general or lax.dot_general
  out = dot_general(inputs, kernel, spec.dimension_numbers, precision=precision)
  if bias is not None:
    out += jnp.reshape(bias, spec.bias_broadcast_shape)
  return out


# ---------------------------------------------------------------- einsum --


@functools.lru_cache(maxsize=256)
def check_einsum_str(einsum_str: str) -> str:
  """Validates an Einsum layer equation and returns it without spaces."""
  einsum_str = einsum_str.replace(' ', '')
  if '->' not in einsum_str:
    raise ValueError('`einsum_str` equation must be explicit and include "->".')
  if einsum_str.count(',') != 1:
    raise ValueError(
      '`einsum_str` equation must have exactly two operands and '
      'therefore, exactly one comma character, instead of '
      f'{einsum_str.count(",")}'
    )
  return einsum_str


def einsum_bias_shape(einsum_str: str, lhs_ndim: int, rhs_shape) -> tuple:
  """Returns ``(bias_shape, broadcast_shape)`` of an Einsum layer's bias.

  The bias covers the output axes that come from the kernel (right
  operand), in the order they have in the output; it is broadcast over
  the other output axes.
  """
  return _einsum_bias_shape(einsum_str, lhs_ndim, tuple(rhs_shape))


@functools.lru_cache(maxsize=256)
def _einsum_bias_shape(einsum_str, lhs_ndim, rhs_shape):
  operands, out = einsum_str.split('->')
  lhs, rhs = operands.split(',')
  used = set(einsum_str)
  free = [c for c in 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' if c not in used]

  def ellipsis_rank(term, ndim):
    return ndim - (len(term) - 3) if '...' in term else 0

  # '...' stands for the broadcast of both operands' ellipsis axes, named
  # here by fresh letters aligned on the right.
  n_lhs = ellipsis_rank(lhs, lhs_ndim)
  n_rhs = ellipsis_rank(rhs, len(rhs_shape))
  letters = ''.join(free[: max(n_lhs, n_rhs)])
  out = out.replace('...', letters)
  rhs = rhs.replace('...', letters[len(letters) - n_rhs :])
  sizes = dict(zip(rhs, rhs_shape))
  # The bias spans the output axes fed by the kernel, in output order.
  bias_shape = tuple(sizes[c] for c in out if c in sizes)
  broadcast = tuple(sizes.get(c, 1) for c in out)
  return bias_shape, broadcast


def einsum_with_bias(
  equation,
  inputs,
  kernel,
  bias,
  broadcast,
  *,
  precision=None,
  preferred_element_type=None,
  einsum_op=None,
):
  """``einsum_op(equation, inputs, kernel)`` plus ``bias`` (None: none).

  ``broadcast`` is the bias shape padded with ones to the output rank, as
  :func:`einsum_bias_shape` returns it. Without ``einsum_op``,
  ``jax.numpy.einsum`` is looked up when the layer runs.
  """
  if einsum_op is None:
    einsum_op = jnp.einsum
  out = einsum_op(
    equation,
    inputs,
    kernel,
    precision=precision,
    preferred_element_type=preferred_element_type,
  )
  if bias is None:
    return out
  return out + jnp.reshape(bias, broadcast)


# ----------------------------------------------------------- convolution --


def _as_pad_pair(p):
  """``(low, high)`` of one axis' padding entry, or None if malformed."""
  if isinstance(p, int):
    return (p, p)
  if isinstance(p, Sequence) and len(p) == 2:
    return (int(p[0]), int(p[1]))
  return None


def canonicalize_padding(padding: PaddingLike, rank: int) -> LaxPadding:
  """Puts a padding spec in the form ``lax.conv_general_dilated`` takes.

  Args:
    padding: a string (``'SAME'``, ``'VALID'``, ``'SAME_LOWER'``, or the
      layer paddings ``'CIRCULAR'``, ``'REFLECT'`` and ``'CAUSAL'``), an int
      (same pad on both sides of every spatial dimension), or a sequence of
      ``rank`` ints or ``(low, high)`` pairs.
    rank: number of spatial dimensions.

  Returns:
    The string as given, or a list of ``rank`` ``(low, high)`` pairs.
  """
  if isinstance(padding, str):
    return padding
  if isinstance(padding, int):
    return [(padding, padding)] * rank
  if isinstance(padding, Sequence) and len(padding) == rank:
    # Entries are read up to the first malformed one (then: the error).
    well_formed = itertools.takewhile(
      lambda pair: pair is not None, map(_as_pad_pair, padding)
    )
    pairs = list(well_formed)
    if len(pairs) == rank:
      return pairs
  raise ValueError(
    f'Invalid padding format: {padding}, should be str, int,'
    f' or a sequence of len {rank} where each element is an'
    ' int or pair of ints.'
  )


def conv_dimension_numbers(input_shape) -> lax.ConvDimensionNumbers:
  """Dimension numbers of a channels-last convolution (NHWC, HWIO)."""
  return _conv_dimension_numbers(len(input_shape))


@functools.lru_cache(maxsize=16)
def _conv_dimension_numbers(ndim):
  lhs_spec = (0, ndim - 1) + tuple(range(1, ndim - 1))
  rhs_spec = (ndim - 1, ndim - 2) + tuple(range(0, ndim - 2))
  return lax.ConvDimensionNumbers(lhs_spec, rhs_spec, lhs_spec)


class ConvSpec(NamedTuple):
  """Canonical configuration of a convolution layer.

  Attributes:
    kernel_size: tuple of spatial kernel sizes.
    strides: tuple of strides.
    padding: lax padding (``'SAME'``, ``'VALID'`` or pairs) applied by the
      convolution itself.
    input_dilation: tuple of input (lhs) dilations.
    kernel_dilation: tuple of kernel (rhs) dilations.
    pre_pad: pads applied with ``jnp.pad`` before the convolution (for
      ``'CIRCULAR'``, ``'REFLECT'`` and ``'CAUSAL'``), or None.
    pre_pad_mode: ``'wrap'``, ``'reflect'`` or ``'constant'``.
    circular: True when the layer asked for ``'CIRCULAR'`` padding.
    layer_padding: the padding string the layer asked for when it is one
      that ``lax`` does not know (``'CIRCULAR'``, ``'REFLECT'``,
      ``'CAUSAL'``), else None.
  """

  kernel_size: tuple
  strides: tuple
  padding: Any
  input_dilation: tuple
  kernel_dilation: tuple
  pre_pad: tuple | None
  pre_pad_mode: str
  circular: bool
  layer_padding: str | None = None


def _broadcast(x, n, name):
  if x is None:
    return (1,) * n
  if isinstance(x, int):
    return (x,) * n
  x = tuple(x)
  if len(x) != n:
    raise ValueError(
      f'{name} must be an int or a sequence of {n} ints (one per spatial '
      f'dimension), got {x}.'
    )
  return x


def _hashable(x):
  if isinstance(x, (list, tuple)):
    return tuple(_hashable(e) for e in x)
  return x


def conv_kernel_size(kernel_size) -> tuple:
  """Accepts an int (1-D) or a sequence of ints."""
  if isinstance(kernel_size, int):
    return (kernel_size,)
  if isinstance(kernel_size, Sequence) and not isinstance(kernel_size, str):
    if all(isinstance(k, (int, np.integer)) for k in kernel_size):
      return tuple(int(k) for k in kernel_size)
  raise TypeError(
    'Expected Conv kernel_size to be a tuple/list of integers (eg.: '
    f'[3, 3]) but got {kernel_size}.'
  )


def conv_spec(
  kernel_size,
  strides=1,
  padding: PaddingLike = 'SAME',
  input_dilation=1,
  kernel_dilation=1,
) -> ConvSpec:
  """Canonicalizes (and caches) the configuration of a convolution.

  Args:
    kernel_size: int or sequence of spatial kernel sizes.
    strides: int, sequence or None (= 1).
    padding: see :func:`canonicalize_padding`.
    input_dilation: int, sequence or None.
    kernel_dilation: int, sequence or None.

  Returns:
    A :class:`ConvSpec`.

  Raises:
    ValueError: ``'CAUSAL'`` padding with more than one spatial dimension,
      or a bad padding / strides format.
  """
  return _conv_spec(
    conv_kernel_size(kernel_size),
    _hashable(strides),
    _hashable(padding),
    _hashable(input_dilation),
    _hashable(kernel_dilation),
  )


@functools.lru_cache(maxsize=512)
def _conv_spec(kernel_size, strides, padding, input_dilation, kernel_dilation):
  n = len(kernel_size)
  strides = _broadcast(strides, n, 'strides')
  input_dilation = _broadcast(input_dilation, n, 'input_dilation')
  kernel_dilation = _broadcast(kernel_dilation, n, 'kernel_dilation')
  lax_padding = canonicalize_padding(padding, n)
  if not isinstance(lax_padding, str):
    lax_padding = tuple(lax_padding)
  pre_pad, mode, circular, layer_padding = None, 'constant', False, None
  # The paddings ``lax`` does not know are applied with ``jnp.pad`` (exact,
  # case-sensitive names); any other string goes to ``lax`` as it is.
  if lax_padding in ('CIRCULAR', 'REFLECT'):
    dilated = [(k - 1) * d + 1 for k, d in zip(kernel_size, kernel_dilation)]
    pre_pad = ((0, 0),) + tuple(((k - 1) // 2, k // 2) for k in dilated)
    pre_pad += ((0, 0),)
    circular = lax_padding == 'CIRCULAR'
    mode = 'wrap' if circular else 'reflect'
    layer_padding, lax_padding = lax_padding, 'VALID'
  elif lax_padding == 'CAUSAL':
    if n != 1:
      raise ValueError(
        'Causal padding is only implemented for 1D convolutions.'
      )
    left = kernel_dilation[0] * (kernel_size[0] - 1)
    pre_pad = ((0, 0), (left, 0), (0, 0))
    layer_padding, lax_padding = lax_padding, 'VALID'
  return ConvSpec(
    kernel_size,
    strides,
    lax_padding,
    input_dilation,
    kernel_dilation,
    pre_pad,
    mode,
    circular,
    layer_padding,
  )


def flatten_batch(inputs, n_spatial: int):
  """Folds all leading batch axes into one (adding one if missing).

  Returns:
    ``(flat_inputs, batch_shape)``; ``batch_shape`` is None when the input
    already had exactly one batch axis.
  """
  n_batch = inputs.ndim - (n_spatial + 1)
  if n_batch == 1:
    return inputs, None
  batch_shape = inputs.shape[:n_batch]
  flat = (int(np.prod(batch_shape)),) + inputs.shape[n_batch:]
  return jnp.reshape(inputs, flat), batch_shape


def unflatten_batch(y, batch_shape):
  """Undoes :func:`flatten_batch` on an output."""
  if batch_shape is None:
    return y
  return jnp.reshape(y, batch_shape + y.shape[1:])


def conv_pre_pad(inputs, spec: ConvSpec):
  """Applies the explicit circular/causal padding of ``spec``."""
  if spec.pre_pad is None:
    return inputs
  return jnp.pad(inputs, spec.pre_pad, mode=spec.pre_pad_mode)


def check_mask(mask, kernel_shape) -> None:
  """Raises ValueError unless ``mask`` (or None) has the kernel's shape."""
  if mask is not None and tuple(mask.shape) != tuple(kernel_shape):
    raise ValueError(
      'Mask needs to have the same shape as weights. '
      f'Shapes are: {mask.shape}, {kernel_shape}'
    )


def conv_kernel_shape(
  kernel_size, in_features: int, features: int, feature_group_count=1
) -> tuple:
  """Kernel shape of a shared-weight convolution."""
  if in_features % feature_group_count:
    raise ValueError(
      f'Input features ({in_features}) must be divisible by '
      f'feature_group_count ({feature_group_count}).'
    )
  return tuple(kernel_size) + (in_features // feature_group_count, features)


def add_bias(y, bias):
  """Adds a bias that covers the trailing axes of ``y``."""
  if bias is None:
    return y
  return y + jnp.reshape(bias, (1,) * (y.ndim - bias.ndim) + bias.shape)


def conv(
  inputs,
  kernel,
  bias,
  spec: ConvSpec,
  *,
  feature_group_count=1,
  precision=None,
  conv_general_dilated=None,
):
  """Channels-last convolution (the body of ``Conv.__call__``).

  Args:
    inputs: ``(*batch, *spatial, in_features)``; any number of batch axes
      (zero included).
    kernel: ``(*kernel_size, in_features // groups, features)``.
    bias: ``(features,)`` or None.
    spec: from :func:`conv_spec`.
    feature_group_count: grouped convolution.
    precision: ``lax.Precision``.
    conv_general_dilated: replacement for ``lax.conv_general_dilated``.

  Returns:
    ``(*batch, *out_spatial, features)``.
  """
  inputs, batch_shape = flatten_batch(inputs, len(spec.kernel_size))
  inputs = conv_pre_pad(inputs, spec)
  conv_fn = conv_general_dilated or lax.conv_general_dilated
  y = conv_fn(
    inputs,
    kernel,
    spec.strides,
    spec.padding,
    lhs_dilation=spec.input_dilation,
    rhs_dilation=spec.kernel_dilation,
    dimension_numbers=conv_dimension_numbers(inputs.shape),
    feature_group_count=feature_group_count,
    precision=precision,
  )
  y = add_bias(y, bias)
  return unflatten_batch(y, batch_shape)


def conv_local_output_spatial(input_shape, features: int, spec: ConvSpec):
  """Output spatial shape of a local (unshared) convolution.

  Args:
    input_shape: shape of the (unpadded) input, any number of batch axes.
    features: output features.
    spec: from :func:`conv_spec`.

  Returns:
    The tuple of output spatial sizes.
  """
  n = len(spec.kernel_size)
  shape = (1,) + tuple(input_shape[len(input_shape) - n - 1 :])
  if spec.pre_pad is not None:
    shape = tuple(s + lo + hi for s, (lo, hi) in zip(shape, spec.pre_pad))
  in_features = shape[-1]
  out = jax.eval_shape(
    lambda lhs, rhs: lax.conv_general_dilated(
      lhs=lhs,
      rhs=rhs,
      window_strides=spec.strides,
      padding=spec.padding,
      lhs_dilation=spec.input_dilation,
      rhs_dilation=spec.kernel_dilation,
      dimension_numbers=conv_dimension_numbers(shape),
    ),
    jax.ShapeDtypeStruct(shape, jnp.float32),
    jax.ShapeDtypeStruct(
      spec.kernel_size + (in_features, features), jnp.float32
    ),
  )
  return out.shape[1:-1]


def conv_local(inputs, kernel, bias, spec: ConvSpec, *, precision=None):
  """Local convolution (unshared weights, ``ConvLocal``).

  Args:
    inputs: ``(*batch, *spatial, in_features)``.
    kernel: ``(*out_spatial, prod(kernel_size) * in_features, features)``.
    bias: ``(*out_spatial, features)`` or None.
    spec: from :func:`conv_spec`.
    precision: ``lax.Precision``.

  Returns:
    ``(*batch, *out_spatial, features)``.
  """
  inputs, batch_shape = flatten_batch(inputs, len(spec.kernel_size))
  inputs = conv_pre_pad(inputs, spec)
  # Window geometry first, then the layout; operands by keyword.
  geometry = dict(
    window_strides=spec.strides,
    padding=spec.padding,
    filter_shape=spec.kernel_size,
    lhs_dilation=spec.input_dilation,
    rhs_dilation=spec.kernel_dilation,
  )
  y = lax.conv_general_dilated_local(
    lhs=inputs,
    rhs=kernel,
    **geometry,
    dimension_numbers=conv_dimension_numbers(inputs.shape),
    precision=precision,
  )
  y = add_bias(y, bias)
  return unflatten_batch(y, batch_shape)


def conv_transpose_kernel_shape(
  kernel_size, in_features: int, features: int, transpose_kernel=False
) -> tuple:
  """Kernel shape of ``ConvTranspose``."""
  if transpose_kernel:
    return tuple(kernel_size) + (features, in_features)
  return tuple(kernel_size) + (in_features, features)


def conv_transpose(
  inputs,
  kernel,
  bias,
  spec: ConvSpec,
  *,
  transpose_kernel=False,
  precision=None,
  preferred_element_type=None,
):
  """Transposed convolution (``lax.conv_transpose``) with Flax's padding.

  ``'CIRCULAR'`` padding computes the VALID transposed convolution and
  wraps it periodically, so the output has ``input_size * stride`` points
  per spatial axis.

  Args:
    inputs: ``(*batch, *spatial, in_features)``.
    kernel: see :func:`conv_transpose_kernel_shape`.
    bias: ``(features,)`` or None.
    spec: from :func:`conv_spec` (``input_dilation`` is not used).
    transpose_kernel: flip spatial axes and swap the feature axes of the
      kernel (gradient-of-conv semantics).
    precision: ``lax.Precision``.
    preferred_element_type: accumulation dtype of the convolution.

  Returns:
    ``(*batch, *out_spatial, features)``.
  """
  padding = spec.padding
  if spec.pre_pad is not None and not spec.circular:
    # No transposed form of these paddings: ``lax`` rejects the name.
    padding = spec.layer_padding
  inputs, batch_shape = flatten_batch(inputs, len(spec.kernel_size))
  y = lax.conv_transpose(
    inputs,
    kernel,
    spec.strides,
    padding,
    rhs_dilation=spec.kernel_dilation,
    transpose_kernel=transpose_kernel,
    precision=precision,
    preferred_element_type=preferred_element_type,
  )
  if spec.circular:
    y = _wrap_periodic(y, inputs.shape, spec.strides, transpose_kernel)
  y = add_bias(y, bias)
  return unflatten_batch(y, batch_shape)


def _wrap_periodic(y, input_shape, strides, transpose_kernel):
  periods = [n * s for n, s in zip(input_shape[1:-1], strides)]
  pads = []
  for size, period in zip(y.shape[1:-1], periods):
    # Pad up to a whole number of periods, keeping the start of the data at
    # a period boundary so that the wrapped result is not shifted.
    extra = -(size - period) % (2 * period)
    if transpose_kernel:
      pads.append((extra // 2, (extra + 1) // 2))
    else:
      pads.append(((extra + 1) // 2, extra // 2))
  y = jnp.pad(y, [(0, 0)] + pads + [(0, 0)])
  for i, period in enumerate(periods, start=1):
    y = y.reshape(y.shape[:i] + (-1, period) + y.shape[i + 1 :])
    y = y.sum(axis=i)
  return y


# ----------------------------------------------------------------- embed --


def embed_lookup(embedding, inputs):
  """Looks rows of ``embedding`` up.

  Out-of-range indices give NaN rows, except for a one-row table, whose
  row every index selects.
  """
  if not jnp.issubdtype(inputs.dtype, jnp.integer):
    raise ValueError('Input type must be an integer or unsigned integer.')
  num_embeddings, *features = embedding.shape
  if num_embeddings == 1:
    return jnp.broadcast_to(embedding[0], (*inputs.shape, *features))
  return jnp.take(embedding, inputs, axis=0)


def embed_attend(query, embedding, *, precision=None):
  """``query @ embedding.T``: logits over the vocabulary (weight tying).

  ``jax.numpy.dot`` gets ``precision`` only when one is given.
  """
  if precision is None:
    return jnp.dot(query, embedding.T)
  return jnp.dot(query, embedding.T, precision=precision)
