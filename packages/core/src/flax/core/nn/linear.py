"""Functional linear layers: dense, dense_general, conv, embedding."""

import math
from collections.abc import Callable, Sequence
from typing import Any, Optional, Union

import jax
import jax.numpy as jnp
from jax import lax

from flax import struct
from flax.core.scope import Scope

default_kernel_init = jax.nn.initializers.lecun_normal()
_zeros = jax.nn.initializers.zeros


def _canonicalize_tuple(x):
  return tuple(x) if isinstance(x, Sequence) else (x,)


def _add_trailing(y, b):
  """Adds ``b`` to the trailing axes of ``y`` without implicit rank promotion."""
  return y + jnp.reshape(b, (1,) * (y.ndim - b.ndim) + b.shape)


def _contract(scope, inputs, kernel, axes, bias, dtype, precision):
  """``inputs`` contracted over ``axes`` with the leading axes of ``kernel``,
  plus a ``bias`` param when ``bias = (init, shape)`` is given."""
  kernel = jnp.asarray(kernel, dtype)
  kernel_axes = tuple(range(len(axes)))
  y = lax.dot_general(
    inputs, kernel, ((tuple(axes), kernel_axes), ((), ())), precision=precision
  )
  if bias is None:
    return y
  return _add_trailing(y, jnp.asarray(scope.param('bias', *bias), dtype))


def dense(
  scope: Scope,
  inputs,
  features: int,
  bias: bool = True,
  dtype=jnp.float32,
  precision=None,
  kernel_init: Callable = default_kernel_init,
  bias_init: Callable = _zeros,
):
  """A linear layer over the last axis: ``inputs @ kernel + bias``.

  Params: ``kernel`` ``(in, features)`` and ``bias`` ``(features,)``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, nn
  >>> y, _ = init(nn.dense)(jax.random.key(0), jnp.ones((2, 3)), 4)
  >>> y.shape
  (2, 4)
  """
  inputs = jnp.asarray(inputs, dtype)
  kernel = scope.param('kernel', kernel_init, (inputs.shape[-1], features))
  return _contract(
    scope,
    inputs,
    kernel,
    (inputs.ndim - 1,),
    (bias_init, (features,)) if bias else None,
    dtype,
    precision,
  )


def dense_general(
  scope: Scope,
  inputs,
  features: Union[int, Sequence[int]],
  axis: Union[int, Sequence[int]] = -1,
  batch_dims: Sequence[int] = (),
  bias: bool = True,
  dtype=jnp.float32,
  kernel_init: Callable = default_kernel_init,
  bias_init: Callable = _zeros,
  precision=None,
):
  """A linear layer over several axes (``axis``) to several features.

  Params: ``kernel`` ``(*in_shape, *features)``, ``bias`` ``features``. The
  kernel initializer is called on the flattened 2-D shape, as in Linen.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, nn
  >>> y, v = init(nn.dense_general)(jax.random.key(0), jnp.ones((2, 3, 4)),
  ...                               (5, 6), axis=(1, 2))
  >>> y.shape, v['params']['kernel'].shape
  ((2, 5, 6), (3, 4, 5, 6))
  """
  if batch_dims:
    raise ValueError('batch_dims is not supported; use lift.vmap instead.')
  inputs = jnp.asarray(inputs, dtype)
  features = _canonicalize_tuple(features)
  axis = tuple(a % inputs.ndim for a in _canonicalize_tuple(axis))
  in_shape = tuple(inputs.shape[a] for a in axis)
  n_in = math.prod(in_shape)
  n_out = math.prod(features)

  def kernel_init_wrap(rng, shape, dtype=jnp.float32):
    flat = kernel_init(rng, (n_in, n_out), dtype)
    return jnp.reshape(flat, shape)

  def bias_init_wrap(rng, shape, dtype=jnp.float32):
    return jnp.reshape(bias_init(rng, (n_out,), dtype), shape)

  kernel = scope.param('kernel', kernel_init_wrap, in_shape + features)
  return _contract(
    scope,
    inputs,
    kernel,
    axis,
    (bias_init_wrap, features) if bias else None,
    dtype,
    precision,
  )


def _conv_dims(ndim):
  spatial = ''.join('HWDABCEFG'[:ndim])
  return ('N' + spatial + 'C', spatial + 'IO', 'N' + spatial + 'C')


def conv(
  scope: Scope,
  inputs,
  features: int,
  kernel_size: Union[int, Sequence[int]],
  strides: Optional[Sequence[int]] = None,
  padding: Any = 'SAME',
  input_dilation: Optional[Sequence[int]] = None,
  kernel_dilation: Optional[Sequence[int]] = None,
  feature_group_count: int = 1,
  bias: bool = True,
  dtype=jnp.float32,
  precision=None,
  kernel_init: Callable = default_kernel_init,
  bias_init: Callable = _zeros,
):
  """An N-d convolution over channels-last ``inputs`` ``(batch, ..., in)``.

  Params: ``kernel`` ``(*kernel_size, in // groups, features)``, ``bias``
  ``(features,)``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, nn
  >>> y, v = init(nn.conv)(jax.random.key(0), jnp.ones((1, 8, 8, 3)), 4,
  ...                      (3, 3))
  >>> y.shape, v['params']['kernel'].shape
  ((1, 8, 8, 4), (3, 3, 3, 4))
  """
  inputs = jnp.asarray(inputs, dtype)
  kernel_size = _canonicalize_tuple(kernel_size)
  n = len(kernel_size)
  strides = tuple(strides) if strides is not None else (1,) * n
  in_features = inputs.shape[-1]
  if in_features % feature_group_count:
    raise ValueError(
      f'Input features {in_features} are not divisible by '
      f'feature_group_count={feature_group_count}.'
    )
  kernel_shape = kernel_size + (in_features // feature_group_count, features)
  kernel = jnp.asarray(scope.param('kernel', kernel_init, kernel_shape), dtype)
  # Where the windows sit: steps, padding, and gaps in input and kernel.
  geometry = dict(
    window_strides=strides,
    padding=padding,
    lhs_dilation=input_dilation,
    rhs_dilation=kernel_dilation,
  )
  y = lax.conv_general_dilated(
    inputs,
    kernel,
    **geometry,
    feature_group_count=feature_group_count,
    dimension_numbers=_conv_dims(n),
    precision=precision,
  )
  if bias:
    b = jnp.asarray(scope.param('bias', bias_init, (features,)), dtype)
    y = _add_trailing(y, b)
  return y


def conv_transpose(
  scope: Scope,
  inputs,
  features: int,
  kernel_size: Union[int, Sequence[int]],
  strides: Optional[Sequence[int]] = None,
  padding: Any = 'SAME',
  kernel_dilation: Optional[Sequence[int]] = None,
  bias: bool = True,
  dtype=jnp.float32,
  precision=None,
  kernel_init: Callable = default_kernel_init,
  bias_init: Callable = _zeros,
):
  """A transposed convolution (``jax.lax.conv_transpose``), channels-last.

  Params: ``kernel`` ``(*kernel_size, in, features)``, ``bias``
  ``(features,)``.
  """
  inputs = jnp.asarray(inputs, dtype)
  kernel_size = _canonicalize_tuple(kernel_size)
  n = len(kernel_size)
  strides = tuple(strides) if strides is not None else (1,) * n
  kernel_shape = kernel_size + (inputs.shape[-1], features)
  kernel = jnp.asarray(scope.param('kernel', kernel_init, kernel_shape), dtype)
  geometry = dict(
    strides=strides, padding=padding, rhs_dilation=kernel_dilation
  )
  y = lax.conv_transpose(
    inputs,
    kernel,
    **geometry,
    dimension_numbers=_conv_dims(n),
    precision=precision,
  )
  if bias:
    b = jnp.asarray(scope.param('bias', bias_init, (features,)), dtype)
    y = _add_trailing(y, b)
  return y


@struct.dataclass
class Embedding:
  """An embedding table with ``lookup`` (ids -> vectors) and ``attend``."""

  table: Any

  def lookup(self, indices):
    """Returns the rows of the table at ``indices``."""
    return self.table[indices]

  def attend(self, query):
    """Returns ``query @ table.T`` (e.g. output logits of tied weights)."""
    return jnp.dot(query, self.table.T)


def embedding(
  scope: Scope,
  num_embeddings: int,
  features: int,
  init_fn: Callable = jax.nn.initializers.normal(stddev=1.0),
) -> Embedding:
  """Declares an ``embedding`` param ``(num_embeddings, features)``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, nn
  >>> def f(scope, ids):
  ...   return nn.embedding(scope, 10, 3).lookup(ids)
  >>> y, v = init(f)(jax.random.key(0), jnp.array([1, 2]))
  >>> y.shape, v['params']['embedding'].shape
  ((2, 3), (10, 3))
  """
  table = scope.param('embedding', init_fn, (num_embeddings, features))
  return Embedding(table)
