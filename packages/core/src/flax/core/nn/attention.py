"""Functional dot-product attention."""

from collections.abc import Callable
from typing import Optional

import jax
import jax.numpy as jnp

from flax.core.nn.linear import default_kernel_init, dense_general
from flax.core.nn.stochastic import dropout
from flax.core.scope import Scope


def dot_product_attention(
  scope: Scope,
  query,
  key,
  value,
  bias=None,
  mask=None,
  dropout_rate: float = 0.0,
  deterministic: bool = True,
  dtype=jnp.float32,
  precision=None,
):
  """Attention ``softmax(q k^T / sqrt(d) + bias) v`` over the key length.

  Shapes: ``query`` ``(..., q_len, heads, d)``, ``key``/``value``
  ``(..., kv_len, heads, d)``; ``mask`` broadcasts to
  ``(..., heads, q_len, kv_len)`` (False = masked out).
  """
  depth = query.shape[-1]
  query = query / jnp.sqrt(depth).astype(dtype)
  logits = jnp.einsum('...qhd,...khd->...hqk', query, key, precision=precision)
  if bias is not None:
    logits = logits + bias
  if mask is not None:
    big_neg = jnp.finfo(logits.dtype).min
    logits = jnp.where(mask, logits, big_neg)
  weights = jax.nn.softmax(logits).astype(dtype)
  if not deterministic and dropout_rate > 0.0:
    weights = dropout(scope, weights, dropout_rate)
  return jnp.einsum(
    '...hqk,...khd->...qhd', weights, value, precision=precision
  )


def multi_head_dot_product_attention(
  scope: Scope,
  inputs_q,
  inputs_kv,
  num_heads: int,
  qkv_features: Optional[int] = None,
  out_features: Optional[int] = None,
  mask=None,
  dropout_rate: float = 0.0,
  deterministic: bool = True,
  dtype=jnp.float32,
  precision=None,
  kernel_init: Callable = default_kernel_init,
  bias_init: Callable = jax.nn.initializers.zeros,
  bias: bool = True,
):
  """Multi-head attention with child scopes ``query``, ``key``, ``value``
  (kernels ``(in, heads, head_dim)``) and ``out`` (``(heads, head_dim,
  out)``), as in Linen.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, nn
  >>> x = jnp.ones((2, 5, 8))
  >>> y, v = init(nn.multi_head_dot_product_attention)(
  ...   jax.random.key(0), x, x, num_heads=2)
  >>> y.shape, v['params']['query']['kernel'].shape
  ((2, 5, 8), (8, 2, 4))
  """
  features = out_features or inputs_q.shape[-1]
  qkv_features = qkv_features or inputs_q.shape[-1]
  if qkv_features % num_heads:
    raise ValueError(
      f'Memory dimension ({qkv_features}) must be divisible by the number '
      f'of heads ({num_heads}).'
    )
  head_dim = qkv_features // num_heads

  def project(name, x):
    return dense_general(
      scope.push(name),
      x,
      (num_heads, head_dim),
      bias=bias,
      dtype=dtype,
      precision=precision,
      kernel_init=kernel_init,
      bias_init=bias_init,
    )

  query = project('query', inputs_q)
  key = project('key', inputs_kv)
  value = project('value', inputs_kv)
  y = dot_product_attention(
    scope,
    query,
    key,
    value,
    mask=mask,
    dropout_rate=dropout_rate,
    deterministic=deterministic,
    dtype=dtype,
    precision=precision,
  )
  return dense_general(
    scope.push('out'),
    y,
    features,
    axis=(-2, -1),
    bias=bias,
    dtype=dtype,
    precision=precision,
    kernel_init=kernel_init,
    bias_init=bias_init,
  )
