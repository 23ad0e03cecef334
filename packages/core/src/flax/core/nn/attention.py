"""Functional dot-product attention over one or several attention axes.

Inputs are laid out ``(batch..., attention axes..., heads, depth)``. Every
axis that is neither an attention axis nor the depth axis (the heads axis
included) is a batch axis of the attention. Logits, weights, ``bias`` and
the masks built here share the layout ``(batch axes..., query attention
axes..., key attention axes...)``.
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from flax import struct
from flax.core.nn.linear import default_kernel_init, dense_general
from flax.core.scope import Scope

Array = Any
_Shape = tuple[int, ...]

__all__ = [
  'CacheEntry',
  'Scope',
  'dense_general',
  'dot_product_attention',
  'make_padding_mask',
  'multi_head_dot_product_attention',
]

_MASKED_BIAS = -1e10


class CacheEntry(struct.PyTreeNode):
  """Keys, values and the next position of an autoregressive decoding cache.

  ``key`` and ``value`` have the full projected shape ``(batch..., attention
  axes..., heads, depth)``; ``i`` (uint32) counts the positions written.

  >>> import jax.numpy as jnp
  >>> from flax.core.nn.attention import CacheEntry
  >>> entry = CacheEntry(jnp.zeros((1, 4, 2, 3)), jnp.zeros((1, 4, 2, 3)),
  ...                    jnp.zeros((), jnp.uint32))
  >>> int(entry.i)
  0
  """

  key: np.ndarray
  value: np.ndarray
  i: np.ndarray


def _attention_axes(axis, ndim: int) -> tuple[int, ...]:
  if axis is None:
    return tuple(range(1, ndim - 2))
  axes = (axis,) if isinstance(axis, int) else tuple(axis)
  if any(not 1 <= a <= ndim - 3 for a in axes):
    raise ValueError(
      'Attention axis must be between the batch axis and the last-two axes.'
    )
  return axes


def _batch_axes(ndim: int, axes: tuple[int, ...]) -> tuple[int, ...]:
  """Every axis except the attention axes and the depth axis, in order."""
  return tuple(a for a in range(ndim - 1) if a not in axes)


def _take(shape, axes) -> tuple[int, ...]:
  return tuple(shape[a] for a in axes)


def dot_product_attention(
  scope: Scope,
  query: Array,
  key: Array,
  value: Array,
  dtype=jnp.float32,
  bias=None,
  axis=None,
  broadcast_dropout: bool = True,
  dropout_rng=None,
  dropout_rate: float = 0.0,
  deterministic: bool = False,
  precision=None,
):
  """Attention ``softmax(q k^T / sqrt(depth) + bias) v`` over ``axis``.

  Args:
    scope: the scope; draws the ``'dropout'`` rng when needed.
    query: ``(batch..., q attention axes..., heads, depth)``.
    key: ``(batch..., kv attention axes..., heads, depth)``.
    value: like ``key`` (its depth may differ).
    dtype: dtype of the attention weights.
    bias: added to the logits; shaped ``(batch axes incl. heads...,
      q positions..., kv positions...)`` (size-1 axes broadcast).
    axis: the attention axes (default: every axis between the first and the
      heads axis). Softmax runs over all key attention axes jointly.
    broadcast_dropout: use one dropout mask for all batch axes.
    dropout_rng: key for dropout (default ``scope.make_rng('dropout')``).
    dropout_rate: probability of dropping an attention weight.
    deterministic: skip dropout.
    precision: precision of the two contractions.

  Returns:
    An array shaped like ``query`` with ``value``'s depth.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import apply, nn
  >>> q = jnp.ones((2, 3, 4, 8))
  >>> apply(nn.dot_product_attention)({}, q, q, q, deterministic=True).shape
  (2, 3, 4, 8)
  """
  query, key, value = jnp.asarray(query), jnp.asarray(key), jnp.asarray(value)
  if key.shape[:-1] != value.shape[:-1]:
    raise AssertionError(
      f'key and value must have the same shape up to the depth axis, got '
      f'{key.shape} and {value.shape}.'
    )
  if (
    query.ndim != key.ndim
    or query.shape[0] != key.shape[0]
    or query.shape[-1] != key.shape[-1]
  ):
    raise AssertionError(
      f'query and key must agree in rank, batch size and depth, got '
      f'{query.shape} and {key.shape}.'
    )
  ndim = key.ndim
  axes = _attention_axes(axis, ndim)
  batch = _batch_axes(ndim, axes)
  order = batch + axes + (ndim - 1,)
  batch_shape = _take(key.shape, batch)
  q_shape, k_shape = _take(query.shape, axes), _take(key.shape, axes)
  q_len, k_len = int(np.prod(q_shape)), int(np.prod(k_shape))

  def flat(x, length):
    x = jnp.transpose(x, order)
    return x.reshape(x.shape[: len(batch)] + (length, x.shape[-1]))

  depth = query.shape[-1]
  query = query / jnp.sqrt(depth).astype(dtype)
  logits = jnp.einsum(
    '...qd,...kd->...qk',
    flat(query, q_len),
    flat(key, k_len),
    precision=precision,
  )
  full_shape = batch_shape + q_shape + k_shape
  if bias is not None:
    logits = (logits.reshape(full_shape) + bias).reshape(logits.shape)
  # exp(x - logsumexp(x)): a row whose logits are all masked out by a huge
  # negative bias keeps weights of 1 per position, as in Flax 0.12.8.
  norm = jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True)
  weights = jnp.exp(logits - norm).astype(dtype)

  if not deterministic and dropout_rate > 0.0:
    if dropout_rng is None:
      dropout_rng = scope.make_rng('dropout')
    keep_prob = 1.0 - dropout_rate
    mask_shape = full_shape
    if broadcast_dropout:
      mask_shape = (1,) * len(batch) + q_shape + k_shape
    keep = jax.random.bernoulli(dropout_rng, keep_prob, mask_shape)
    multiplier = keep.astype(weights.dtype) / jnp.asarray(keep_prob, dtype)
    weights = (weights.reshape(full_shape) * multiplier).reshape(logits.shape)

  out = jnp.einsum(
    '...qk,...kd->...qd', weights, flat(value, k_len), precision=precision
  )
  out = out.reshape(batch_shape + q_shape + (out.shape[-1],))
  return jnp.transpose(out, np.argsort(order))


def _position_mask(mask, shape, axes, batch, is_query: bool, n_q, n_k):
  """Lays a per-position mask out as ``(batch..., q positions, k positions)``.

  ``mask`` covers ``shape[:-2]`` (an extra trailing size-1 axis is allowed).
  The heads axis and the other side's positions become size-1 axes.
  """
  mask = jnp.asarray(mask)
  ndim = len(shape)
  if mask.ndim == ndim - 1:
    if mask.shape[-1] != 1:
      raise ValueError(
        f'A mask for inputs of shape {tuple(shape)} must have shape '
        f'{tuple(shape[:-2])} (optionally with a trailing 1), got '
        f'{mask.shape}.'
      )
    mask = mask[..., 0]
  if mask.ndim != ndim - 2:
    raise ValueError(
      f'A mask for inputs of shape {tuple(shape)} must have shape '
      f'{tuple(shape[:-2])} (optionally with a trailing 1), got {mask.shape}.'
    )
  outer = tuple(a for a in batch if a < ndim - 2)
  mask = jnp.transpose(mask, outer + axes)
  lead = mask.shape[: len(outer)] + (1,)
  positions = mask.shape[len(outer) :]
  if is_query:
    return mask.reshape(lead + positions + (1,) * n_k)
  return mask.reshape(lead + (1,) * n_q + positions)


def make_padding_mask(
  padding_mask_query,
  padding_mask_key,
  query_shape: _Shape,
  key_shape: _Shape,
  attention_axis=None,
  segmentation_mask: bool = False,
):
  """Builds a float32 attention mask from per-position masks or segment ids.

  Args:
    padding_mask_query: ``query_shape[:-2]`` (or with a trailing 1): which
      query positions are real tokens, or their segment ids.
    padding_mask_key: the same for the key positions (``key_shape[:-2]``).
    query_shape: shape of the projected query ``(batch..., length..., heads,
      depth)``.
    key_shape: shape of the projected key.
    attention_axis: the attention axes (default: all but the first and the
      last two).
    segmentation_mask: compare segment ids for equality instead of
      multiplying padding masks.

  Returns:
    ``(batch..., 1, q positions..., kv positions...)``, 1.0 where attending
    is allowed.

  >>> import jax.numpy as jnp
  >>> from flax.core.nn.attention import make_padding_mask
  >>> q = jnp.array([[True, True, False]])
  >>> make_padding_mask(q, q, (1, 3, 2, 4), (1, 3, 2, 4))[0, 0].tolist()
  [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
  """
  ndim = len(query_shape)
  axes = tuple(range(1, ndim - 2)) if attention_axis is None else attention_axis
  axes = (axes,) if isinstance(axes, int) else tuple(axes)
  batch = _batch_axes(ndim, axes)
  n = len(axes)
  q = _position_mask(padding_mask_query, query_shape, axes, batch, True, n, n)
  k = _position_mask(padding_mask_key, key_shape, axes, batch, False, n, n)
  if segmentation_mask:
    mask = jnp.equal(q, k)
  else:
    mask = q * k
  return mask.astype(jnp.float32)


def _causal_mask(n_batch: int, q_shape, k_shape, limit=None):
  """Query position >= key position (flattened over the attention axes).

  With ``limit`` (decoding with a cache), key positions below ``limit``.
  """
  k_pos = jnp.arange(int(np.prod(k_shape)), dtype=jnp.uint32)
  if limit is not None:
    return (k_pos < limit).reshape((1,) * (n_batch + len(q_shape)) + k_shape)
  q_pos = jnp.arange(int(np.prod(q_shape)), dtype=jnp.uint32)
  mask = q_pos[:, None] >= k_pos[None, :]
  return mask.reshape((1,) * n_batch + q_shape + k_shape)


def _cache_initializer(key):
  """The function stored in ``cache/entry`` before decoding starts."""
  ndim, tail = key.ndim, key.shape[-2:]

  def init_cache(shape, dtype=jnp.float32):
    full_shape = tuple(shape) + tuple(tail)
    if len(full_shape) != ndim:
      raise ValueError(
        f'The cache shape must list the batch and attention axes '
        f'({ndim - 2} sizes), got {tuple(shape)}.'
      )
    zeros = jnp.zeros(full_shape, dtype)
    return CacheEntry(key=zeros, value=zeros, i=jnp.zeros((), jnp.uint32))

  return init_cache


def _write_cache(entry, inputs_q, key, value, axes):
  """Writes one decoding step into ``entry``; returns keys, values, entry."""
  cshape = entry.key.shape
  expected = list(cshape[:-2])
  for a in axes:
    expected[a] = 1
  expected = tuple(expected) + inputs_q.shape[-1:]
  if expected != inputs_q.shape:
    raise ValueError(
      f'Invalid shape provided, expected shape {expected} instead got '
      f'{inputs_q.shape}.'
    )
  start = [jnp.zeros((), jnp.uint32)] * len(cshape)
  position = entry.i
  for a in reversed(axes):
    start[a] = position % cshape[a]
    position = position // cshape[a]
  key = lax.dynamic_update_slice(entry.key, key.astype(entry.key.dtype), start)
  value = lax.dynamic_update_slice(
    entry.value, value.astype(entry.value.dtype), start
  )
  entry = entry.replace(key=key, value=value, i=entry.i + jnp.uint32(1))
  return key, value, entry


# Arguments multi_head_dot_product_attention hands on unchanged: to every
# projection, and to ``attention_fn``.
_DENSE_ARGS = ('dtype', 'kernel_init', 'bias_init', 'bias', 'precision')
_DROPOUT_ARGS = (
  'dropout_rng',
  'dropout_rate',
  'broadcast_dropout',
  'deterministic',
)
_Init = Callable[..., Any]


def multi_head_dot_product_attention(
  scope: Scope,
  inputs_q: Array,
  inputs_kv: Array,
  num_heads: int,
  dtype=jnp.float32,
  qkv_features: int | None = None,
  out_features: int | None = None,
  attention_axis=None,
  causal_mask: bool = False,
  padding_mask=None,
  key_padding_mask=None,
  segmentation: Array | None = None,
  key_segmentation=None,
  cache: bool = False,
  broadcast_dropout=True,
  dropout_rng=None,
  dropout_rate: float = 0.0,
  deterministic=False,
  precision=None,
  kernel_init: _Init = default_kernel_init,
  bias_init: _Init = jax.nn.initializers.zeros,
  bias=True,
  attention_fn: Callable[..., Any] = dot_product_attention,
):
  """Multi-head attention with child scopes ``query``, ``key``, ``value`` and
  ``out``.

  Projections have kernels ``(in, heads, head_dim)``, the output kernel is
  ``(heads, head_dim, out)``. Masks (causal, padding, segmentation) combine
  into an additive bias of ``0`` / ``-1e10`` handed to ``attention_fn``,
  which runs in a child scope named after it (``dot_product_attention_0``).

  With ``cache=True`` (causal only) the ``cache`` collection holds
  ``entry``: first a function ``init(shape, dtype=float32)`` returning a
  :class:`CacheEntry` for the batch and attention sizes ``shape``; once the
  user stores that entry, each call decodes one position into it.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, nn
  >>> x = jnp.ones((2, 5, 8))
  >>> y, v = init(nn.multi_head_dot_product_attention)(
  ...   jax.random.key(0), x, x, num_heads=2, deterministic=True)
  >>> y.shape, v['params']['query']['kernel'].shape
  ((2, 5, 8), (8, 2, 4))
  """
  args = locals()
  if cache and not causal_mask:
    raise AssertionError('Caching is only support for causal attention.')
  if attention_axis is None:
    attention_axis = tuple(range(1, inputs_q.ndim - 1))
  axes = (
    (attention_axis,) if isinstance(attention_axis, int) else attention_axis
  )
  axes = tuple(axes)
  features = out_features or inputs_q.shape[-1]
  qkv_features = qkv_features or inputs_q.shape[-1]
  if qkv_features % num_heads:
    raise AssertionError(
      'Memory dimension must be divisible by number of heads '
      f'(got {qkv_features} features for {num_heads} heads).'
    )
  head_dim = qkv_features // num_heads

  dense_options = {k: args[k] for k in _DENSE_ARGS}

  def project(name, x):
    dense = scope.child(dense_general, name)
    return dense(x, features=(num_heads, head_dim), axis=-1, **dense_options)

  query = project('query', inputs_q)
  key = project('key', inputs_kv)
  value = project('value', inputs_kv)

  entry = None
  if cache:
    if not scope.has_variable('cache', 'entry'):
      scope.put_variable('cache', 'entry', _cache_initializer(key))
    else:
      entry = scope.get_variable('cache', 'entry')
      if not isinstance(entry, CacheEntry):
        raise ValueError('Cache is not initialized.')
      key, value, entry = _write_cache(entry, inputs_q, key, value, axes)
      cshape = entry.key.shape
      key_padding_mask = jnp.broadcast_to(
        jnp.arange(cshape[1]) < entry.i, cshape[:2]
      ).astype(jnp.float32)[..., None]
      scope.put_variable('cache', 'entry', entry)

  n_batch = key.ndim - 1 - len(axes)
  q_shape, k_shape = _take(query.shape, axes), _take(key.shape, axes)
  masks = []
  if causal_mask:
    limit = None if entry is None else entry.i
    masks.append(_causal_mask(n_batch, q_shape, k_shape, limit))
  if padding_mask is not None:
    if key_padding_mask is None:
      key_padding_mask = padding_mask
    masks.append(
      make_padding_mask(
        padding_mask, key_padding_mask, query.shape, key.shape, axes
      )
    )
  if segmentation is not None:
    if key_segmentation is None:
      key_segmentation = segmentation
    masks.append(
      make_padding_mask(
        segmentation,
        key_segmentation,
        query.shape,
        key.shape,
        axes,
        segmentation_mask=True,
      )
    )
  attention_bias = None
  if masks:
    allowed = masks[0] > 0
    for m in masks[1:]:
      allowed = jnp.logical_and(allowed, m > 0)
    attention_bias = jnp.where(
      allowed, jnp.zeros((), dtype), jnp.full((), _MASKED_BIAS, dtype)
    )

  # The attention runs in its own child scope (named after ``attention_fn``),
  # which is where its dropout rng is drawn.
  attention_options = {
    'dtype': dtype,
    'axis': axes,
    'bias': attention_bias,
    **{k: args[k] for k in _DROPOUT_ARGS},
    'precision': precision,
  }
  x = scope.child(attention_fn)(query, key, value, **attention_options)
  # The output projection shares the input ones' settings but its axes.
  out = scope.child(dense_general, 'out')
  return out(x, features=features, axis=(-2, -1), **dense_options)
