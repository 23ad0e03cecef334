"""Dot-product attention and attention masks.

Shapes follow Flax: queries/keys/values are ``[batch..., length, heads,
depth]``, attention weights ``[batch..., heads, q_length, kv_length]``.

>>> import jax.numpy as jnp
>>> from flax.layers.attention import make_causal_mask
>>> make_causal_mask(jnp.ones((1, 3)))[0, 0]
Array([[1., 0., 0.],
       [1., 1., 0.],
       [1., 1., 1.]], dtype=float32)
"""

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax import random

from flax.layers.dtypes import promote_dtype

Array = Any


def _einsum(einsum, einsum_dot_general, precision, names='einsum'):
  """The einsum to use: a custom one as given, or ``jnp.einsum`` with
  ``precision`` and ``einsum_dot_general`` bound.

  Both ``jnp.einsum`` and, without ``einsum_dot_general``,
  ``jax.lax.dot_general`` are looked up on every call, so patching either
  reaches the attention math.

  Raises:
    ValueError: for a custom einsum together with ``precision`` or
      ``einsum_dot_general``, which only configure ``jnp.einsum``
      (``names`` says which arguments gave the custom einsum).
  """
  if einsum is not None:
    if precision is not None or einsum_dot_general is not None:
      raise ValueError(
        f'precision/einsum_dot_general and {names} are mutually exclusive: '
        'a custom einsum brings its own settings, so give only one of them.'
      )
    return einsum
  if einsum_dot_general is None:
    einsum_dot_general = lax.dot_general
  return functools.partial(
    jnp.einsum, precision=precision, _dot_general=einsum_dot_general
  )


_EINSUM_PAIR = 'qk_attn_weights_einsum/attn_weights_value_einsum'


def _einsum_pair(qk_einsum, av_einsum, einsum_dot_general, precision):
  """The two einsums of :func:`dot_product_attention` (see ``_einsum``).

  Raises:
    ValueError: if only one of the two custom einsums is given.
  """
  if (qk_einsum is None) != (av_einsum is None):
    raise ValueError(
      'qk_attn_weights_einsum and attn_weights_value_einsum must be '
      'specified together.'
    )
  return (
    _einsum(qk_einsum, einsum_dot_general, precision, _EINSUM_PAIR),
    _einsum(av_einsum, einsum_dot_general, precision, _EINSUM_PAIR),
  )


# What attention operands must agree on: (end of the message, measure).
QKV_AGREE = (
  ('must have same rank', lambda x: x.ndim),
  ('batch dims must match', lambda x: x.shape[:-3]),
  ('num_heads must match', lambda x: x.shape[-2]),
)
QK_AGREE = QKV_AGREE + (('depths must match', lambda x: x.shape[-1]),)
KV_AGREE = (('lengths must match', lambda x: x.shape[-3]),)


def check_same(names, arrays, measures, error=AssertionError):
  """Raises ``error('<names> <phrase>.')`` at the first measure that differs.

  Args:
    names: how the message names the operands (``'q, k'``).
    arrays: the operands.
    measures: ``(phrase, measure)`` pairs, e.g. :data:`QK_AGREE`.
    error: the exception class.
  """
  for phrase, measure in measures:
    first = measure(arrays[0])
    if any(measure(x) != first for x in arrays[1:]):
      raise error(f'{names} {phrase}.')


def dot_product_attention_weights(
  query,
  key,
  bias=None,
  mask=None,
  broadcast_dropout: bool = True,
  dropout_rng=None,
  dropout_rate: float = 0.0,
  deterministic: bool = False,
  dtype=None,
  precision=None,
  module=None,
  force_fp32_for_softmax: bool = False,
  einsum_dot_general: Callable | None = None,
  einsum: Callable | None = None,
):
  """Computes dot-product attention weights of a query and a key.

  Args:
    query: ``[batch..., q_length, num_heads, qk_depth]``.
    key: ``[batch..., kv_length, num_heads, qk_depth]``.
    bias: added to the logits; broadcastable to
      ``[batch..., num_heads, q_length, kv_length]``.
    mask: boolean, False where attention is masked out; same broadcast.
    broadcast_dropout: share the dropout mask over batch and head axes.
    dropout_rng: PRNG key for dropout.
    dropout_rate: dropout probability.
    deterministic: no dropout when True.
    dtype: computation dtype (None promotes query and key).
    precision: ``lax.Precision`` of the einsum.
    module: optional object with a ``sow(collection, name, value)`` method;
      the weights are sown as ``('intermediates', 'attention_weights')``.
    force_fp32_for_softmax: compute the softmax in float32.
    einsum_dot_general: ``dot_general`` used by the einsum.
    einsum: replacement for ``jnp.einsum``.

  Returns:
    The weights, ``[batch..., num_heads, q_length, kv_length]``.
  """
  query, key = promote_dtype(query, key, dtype=dtype)
  dtype = query.dtype
  check_same('q, k', (query, key), QK_AGREE)
  # Scale the queries (not the logits) by 1/sqrt(depth), in ``dtype``.
  query = query / jnp.sqrt(query.shape[-1]).astype(dtype)
  einsum = _einsum(einsum, einsum_dot_general, precision)
  weights = einsum('...qhd,...khd->...hqk', query, key)
  if bias is not None:
    weights = weights + bias
  if mask is not None:
    weights = jnp.where(mask, weights, jnp.finfo(dtype).min)
  if force_fp32_for_softmax and dtype != jnp.float32:
    weights = jax.nn.softmax(weights.astype(jnp.float32))
  else:
    weights = jax.nn.softmax(weights).astype(dtype)
  if module is not None:
    module.sow('intermediates', 'attention_weights', weights)
  if not deterministic and dropout_rate > 0.0:
    weights = weights * attention_dropout_multiplier(
      dropout_rng,
      dropout_rate,
      weights.shape,
      key.ndim,
      broadcast_dropout,
      dtype,
    )
  return weights


def attention_dropout_multiplier(
  rng, rate, weights_shape, key_ndim, broadcast_dropout, dtype
):
  """``keep / keep_prob`` multiplier of attention dropout."""
  keep_prob = 1.0 - rate
  if broadcast_dropout:
    shape = (1,) * (key_ndim - 2) + tuple(weights_shape[-2:])
  else:
    shape = weights_shape
  keep = random.bernoulli(rng, keep_prob, shape)
  return keep.astype(dtype) / jnp.asarray(keep_prob, dtype=dtype)


def dot_product_attention(
  query,
  key,
  value,
  bias=None,
  mask=None,
  broadcast_dropout: bool = True,
  dropout_rng=None,
  dropout_rate: float = 0.0,
  deterministic: bool = False,
  dtype=None,
  precision=None,
  module=None,
  force_fp32_for_softmax: bool = False,
  einsum_dot_general: Callable | None = None,
  qk_attn_weights_einsum: Callable | None = None,
  attn_weights_value_einsum: Callable | None = None,
):
  """Scaled dot-product attention: ``softmax(q k^T / sqrt(d)) v``.

  Args:
    query: ``[batch..., q_length, num_heads, qk_depth]``.
    key: ``[batch..., kv_length, num_heads, qk_depth]``.
    value: ``[batch..., kv_length, num_heads, v_depth]``.
    bias, mask, broadcast_dropout, dropout_rng, dropout_rate,
      deterministic, dtype, precision, module, force_fp32_for_softmax,
      einsum_dot_general: see :func:`dot_product_attention_weights`.
    qk_attn_weights_einsum: einsum used for the logits.
    attn_weights_value_einsum: einsum used for the weighted values.

  Returns:
    ``[batch..., q_length, num_heads, v_depth]``.

  >>> import jax.numpy as jnp
  >>> q = k = v = jnp.ones((2, 3, 4, 5))
  >>> dot_product_attention(q, k, v).shape
  (2, 3, 4, 5)
  """
  query, key, value = promote_dtype(query, key, value, dtype=dtype)
  dtype = query.dtype
  check_same('q, k, v', (query, key, value), QKV_AGREE)
  check_same('k, v', (key, value), KV_AGREE)
  qk_einsum, av_einsum = _einsum_pair(
    qk_attn_weights_einsum,
    attn_weights_value_einsum,
    einsum_dot_general,
    precision,
  )
  dropout = (broadcast_dropout, dropout_rng, dropout_rate, deterministic)
  weights = dot_product_attention_weights(
    query,
    key,
    bias,
    mask,
    *dropout,
    dtype,
    None,  # the precision is bound into ``qk_einsum``
    module,
    force_fp32_for_softmax,
    einsum=qk_einsum,
  )
  return av_einsum('...hqk,...khd->...qhd', weights, value)


_KV_CLASH = (
  'If either `inputs_k` or `inputs_v` is not None, `inputs_kv` must be '
  'None. If `inputs_kv` is not None, both `inputs_k` and `inputs_v` must '
  'be None. We recommend using `inputs_k` and `inputs_v` args, since '
  '`inputs_kv` will be deprecated.'
)
_V_WITHOUT_K = (
  '`inputs_k` cannot be None if `inputs_v` is not None. To have both '
  '`inputs_k` and `inputs_v` be the same value, pass in the value to '
  '`inputs_k` and leave `inputs_v` as None.'
)


def attention_inputs(inputs_q, inputs_k=None, inputs_v=None, inputs_kv=None):
  """The ``(key_input, value_input)`` of an attention layer call.

  Keys default to the queries (self-attention), values to the keys. The
  older ``inputs_kv`` gives both at once and excludes the other two.
  """
  if inputs_kv is not None:
    if inputs_k is None and inputs_v is None:
      return inputs_kv, inputs_kv
    raise ValueError(_KV_CLASH)
  if inputs_k is None:
    if inputs_v is not None:
      raise ValueError(_V_WITHOUT_K)
    inputs_k = inputs_q
  return inputs_k, inputs_k if inputs_v is None else inputs_v


ATTENTION_FIELDS = ('dropout_rate', 'broadcast_dropout', 'dtype', 'precision')
"""Attention-layer attributes handed as they are to ``attention_fn``."""


def make_attention_mask(
  query_input,
  key_input,
  pairwise_fn: Callable = jnp.multiply,
  extra_batch_dims: int = 0,
  dtype=jnp.float32,
):
  """Mask for attention weights from query and key inputs.

  Args:
    query_input: ``[batch..., len_q]``.
    key_input: ``[batch..., len_kv]``.
    pairwise_fn: combines a query and a key element.
    extra_batch_dims: leading singleton axes to add.
    dtype: mask dtype.

  Returns:
    ``[batch..., 1, len_q, len_kv]``.
  """
  rows = jnp.asarray(query_input)[..., :, None]
  pairs = pairwise_fn(rows, jnp.asarray(key_input)[..., None, :])
  # One head axis before the two length axes, then the extra batch axes.
  shape = (1,) * extra_batch_dims + pairs.shape[:-2] + (1,) + pairs.shape[-2:]
  return pairs.reshape(shape).astype(dtype)


def make_causal_mask(x, extra_batch_dims: int = 0, dtype=jnp.float32):
  """Causal mask: position ``i`` attends to positions ``<= i``.

  Args:
    x: ``[batch..., len]`` (only the shape is used).
    extra_batch_dims: leading singleton axes to add.
    dtype: mask dtype.

  Returns:
    ``[batch..., 1, len, len]``.
  """
  positions = jnp.arange(x.shape[-1], dtype=jnp.int32)
  positions = jnp.broadcast_to(positions, x.shape)
  return make_attention_mask(
    positions, positions, jnp.greater_equal, extra_batch_dims, dtype
  )


def combine_masks(*masks, dtype=jnp.float32):
  """Logical AND of the masks that are not None (None if all are).

  All masks must have the same rank.
  """
  masks = [m for m in masks if m is not None]
  if not masks:
    return None
  assert all(m.ndim == masks[0].ndim for m in masks), (
    f'masks must have same rank: {tuple(m.ndim for m in masks)}'
  )
  mask = masks[0]
  for other in masks[1:]:
    mask = jnp.logical_and(mask, other)
  return mask.astype(dtype)


def cache_step_indices(cur_index, n_batch: int):
  """Start indices of a decode-cache update at position ``cur_index``."""
  zero = jnp.array(0, dtype=lax.dtype(cur_index.dtype))
  return (zero,) * n_batch + (cur_index, zero, zero)


def cache_step_mask(cur_index, batch_dims, max_length: int):
  """Mask of the cached positions ``<= cur_index`` for one decode step."""
  return jnp.broadcast_to(
    jnp.arange(max_length) <= cur_index,
    tuple(batch_dims) + (1, 1, max_length),
  )


def causal_mask(q_length: int, kv_length: int):
  """Boolean ``[q_length, kv_length]`` mask: query ``i`` sees keys ``<= i``.

  >>> causal_mask(2, 3)
  Array([[ True, False, False],
         [ True,  True, False]], dtype=bool)
  """
  return jnp.tril(jnp.ones((q_length, kv_length), dtype=jnp.bool_))


def with_causal_mask(mask, q_length: int, kv_length: int):
  """``mask`` (or no mask) combined with :func:`causal_mask`.

  The causal mask gets leading singleton axes to the rank of ``mask``.
  """
  causal = causal_mask(q_length, kv_length)
  if mask is None:
    return causal
  causal = jnp.reshape(causal, (1,) * (mask.ndim - 2) + causal.shape)
  return jnp.logical_and(mask, causal)


def repeat_kv_heads(query, key, value=None):
  """Repeats the heads of ``key`` (and ``value``) to match ``query``.

  Grouped-query attention: each key/value head serves
  ``query_heads // kv_heads`` consecutive query heads.

  Raises:
    ValueError: if the query heads are not a multiple of the key heads.
  """
  q_heads, kv_heads = query.shape[-2], key.shape[-2]
  if q_heads == kv_heads:
    return key, value
  if q_heads % kv_heads:
    raise ValueError(
      f'The number of query heads ({q_heads}) must be a multiple of the '
      f'number of key/value heads ({kv_heads}).'
    )
  reps = q_heads // kv_heads
  key = jnp.repeat(key, reps, axis=-2)
  if value is not None:
    value = jnp.repeat(value, reps, axis=-2)
  return key, value
