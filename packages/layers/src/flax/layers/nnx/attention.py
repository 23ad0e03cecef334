"""Attention for NNX: ``MultiHeadAttention`` and the attention functions."""

from __future__ import annotations

import functools
import typing as tp
from types import MappingProxyType

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from flax import nnx
from flax.nnx import Module as Module
from flax.typing import PromoteDtypeFn as PromoteDtypeFn
from flax.typing import Shape
from flax.layers import attention as _attention
from flax.layers.nnx import dtypes
from flax.layers.nnx import initializers
from flax.layers.nnx._utils import first_from
from flax.layers.nnx._utils import fork_stream
from flax.layers.nnx._utils import key_from
from flax.layers.nnx._utils import optional_data
from flax.layers.nnx.linear import LinearGeneral
from flax.layers.nnx.linear import default_kernel_init
from flax.layers.nnx.normalization import LayerNorm

Array = jax.Array

combine_masks = _attention.combine_masks
make_attention_mask = _attention.make_attention_mask
make_causal_mask = _attention.make_causal_mask

_EMPTY = MappingProxyType({})
_OptArray = Array | None
_OptInt = int | None
_OptBool = bool | None
_DotGeneral = tp.Callable[..., Array]


def dot_product_attention_weights(
  query: Array,
  key: Array,
  bias: Array | None = None,
  mask: _OptArray = None,
  broadcast_dropout: bool = True,
  dropout_rng: Array | None = None,
  dropout_rate: float = 0.0,
  deterministic: bool = False,
  dtype=None,
  precision=None,
  module: nnx.Module | None = None,
  promote_dtype=dtypes.promote_dtype,
  is_causal: bool = False,
):
  """Attention weights ``softmax(q k^T / sqrt(depth) + bias)``.

  ``query`` and ``key`` have shape ``[batch..., length, heads, depth]``; the
  result has shape ``[batch..., heads, q_length, kv_length]``. When
  ``module`` is given, the weights are sown into it as an
  ``nnx.Intermediate`` named ``attention_weights``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> q = k = jnp.ones((2, 3, 4, 5))
  >>> nnx.dot_product_attention_weights(q, k).shape
  (2, 4, 3, 3)

  Args:
    query: queries.
    key: keys.
    bias: added to the attention logits (broadcastable to the weights).
    mask: boolean mask, False entries are masked out.
    broadcast_dropout: use one dropout mask for all batch dimensions.
    dropout_rng: key for dropout.
    dropout_rate: dropout rate.
    deterministic: if True, no dropout.
    dtype: dtype of the computation (default: inferred).
    precision: numerical precision of the einsum.
    module: module to sow the weights into.
    promote_dtype: dtype promotion function.
    is_causal: also mask out keys after each query position (query ``i``
      attends to keys ``<= i``).

  Returns:
    The attention weights.
  """
  query, key = promote_dtype((query, key), dtype=dtype)
  key, _ = _attention.repeat_kv_heads(query, key)
  if is_causal:
    mask = _attention.with_causal_mask(mask, query.shape[-3], key.shape[-3])
  dropout = (broadcast_dropout, dropout_rng, dropout_rate, deterministic)
  # ``jnp.einsum`` as it is when called, with only ``precision`` given.
  weights = _attention.dot_product_attention_weights(
    query,
    key,
    bias,
    mask,
    *dropout,
    query.dtype,
    einsum=functools.partial(jnp.einsum, precision=precision),
  )
  if module is not None:
    module.sow(nnx.Intermediate, 'attention_weights', weights)
  return weights


def _fused_attention(query, key, value, bias, mask, is_causal):
  """``jax.nn.dot_product_attention`` with the batch dimensions folded into
  one; a ``bias`` / ``mask`` of the query's rank has its leading dimensions
  folded the same way, one of lower rank broadcasts as it is."""
  batch = query.shape[:-3]
  if len(batch) > 1:
    ndim = query.ndim

    def fold(x):
      if x is None or x.ndim != ndim:
        return x
      return jnp.reshape(x, (-1,) + x.shape[-3:])

    query, key, value, bias, mask = map(fold, (query, key, value, bias, mask))
  if mask is not None:
    mask = mask.astype(bool)  # nonzero entries attend
  out = jax.nn.dot_product_attention(
    query, key, value, bias=bias, mask=mask, is_causal=is_causal
  )
  return jnp.reshape(out, batch + out.shape[-3:])


def _check_operands(query, key, value, *, fused: bool):
  """The operand checks of :func:`dot_product_attention`.

  Without dropout and without a module to sow into (``fused``), the
  operands must fit a fused ``[batch, length, heads, depth]`` kernel (batch
  dimensions folded into one): ``value`` has ``key``'s shape, ``query`` its
  depth, and the query heads are a multiple of the key heads. Otherwise
  ``value`` may have another depth, and ``key`` and ``value`` their own
  numbers of heads (each dividing the query heads).
  """
  shapes = (query.shape, key.shape, value.shape)
  if not query.ndim == key.ndim == value.ndim:
    ranks = ', '.join(str(len(s)) for s in shapes)
    raise ValueError(f'q, k, v must have same rank, but got {ranks}.')
  if not query.shape[:-3] == key.shape[:-3] == value.shape[:-3]:
    raise ValueError(
      'q, k, v batch dims must match, but got shapes '
      f'{", ".join(map(str, shapes))}.'
    )
  if key.shape[-3] != value.shape[-3]:
    raise ValueError(
      f'k, v lengths must match, but got {key.shape[-3]} and {value.shape[-3]}.'
    )
  q_heads = query.shape[-2]
  if fused:
    batch = int(np.prod(key.shape[:-3]))
    length, heads, depth = key.shape[-3:]
    expected = [batch, length, heads, depth]
    if (batch, *value.shape[-3:]) != tuple(expected):
      raise ValueError(
        f'value shape should be {expected}: but got '
        f'{(batch, *value.shape[-3:])}'
      )
    if query.shape[-1] != depth:
      raise ValueError(
        f'query shape should be {[batch, -1, -1, depth]}: but got '
        f'{(batch, *query.shape[-3:])}'
      )
    if q_heads % heads:
      raise ValueError(
        'The number of query heads must be a multiple of key/value heads, '
        f'but got {q_heads} vs {heads}'
      )
    return
  if query.shape[-1] != key.shape[-1]:
    raise ValueError(
      f'q, k depths must match, but got {query.shape[-1]} and {key.shape[-1]}.'
    )
  for name, x, tail in (
    ('Key', key, ' for Grouped Query Attention.'),
    ('Value', value, ''),
  ):
    if q_heads % x.shape[-2]:
      raise ValueError(
        f'Query heads ({q_heads}) must be multiple of {name} heads '
        f'({x.shape[-2]}){tail}'
      )


def _repeat_heads(x, query):
  """``x`` with each head repeated to give ``query``'s number of heads."""
  reps = query.shape[-2] // x.shape[-2]
  return x if reps == 1 else jnp.repeat(x, reps, axis=-2)


def dot_product_attention(
  query: Array,
  key: Array,
  value: Array,
  bias: _OptArray = None,
  mask: Array | None = None,
  broadcast_dropout: bool = True,
  dropout_rng: _OptArray = None,
  dropout_rate: float = 0.0,
  deterministic: bool = False,
  dtype=None,
  precision=None,
  module: nnx.Module | None = None,
  promote_dtype=dtypes.promote_dtype,
  is_causal: bool = False,
):
  """Scaled dot-product attention.

  Shapes: ``query [batch..., q_len, heads, depth]``, ``key`` and ``value``
  ``[batch..., kv_len, heads, depth]``; the result is
  ``[batch..., q_len, heads, v_depth]``. ``key`` and ``value`` may have
  fewer heads than ``query`` (grouped-query attention): each of their heads
  serves a group of consecutive query heads. See
  :func:`dot_product_attention_weights` for the other arguments.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> q = k = v = jnp.ones((2, 3, 4, 5))
  >>> nnx.dot_product_attention(q, k, v).shape
  (2, 3, 4, 5)

  Returns:
    The attention output.
  """
  query, key, value = promote_dtype((query, key, value), dtype=dtype)
  dtype = query.dtype
  fused = dropout_rate == 0.0 and module is None
  _check_operands(query, key, value, fused=fused)
  if fused:
    # Nothing to drop out or sow: JAX's fused attention computes it.
    return _fused_attention(query, key, value, bias, mask, is_causal)
  key, value = _repeat_heads(key, query), _repeat_heads(value, query)
  dropout = (broadcast_dropout, dropout_rng, dropout_rate, deterministic)
  weights = dot_product_attention_weights(
    query,
    key,
    bias,
    mask,
    *dropout,
    dtype,
    precision,
    module,
    promote_dtype,
    is_causal,
  )
  return jnp.einsum(
    '...hqk,...khd->...qhd', weights, value, precision=precision
  )


class MultiHeadAttention(nnx.Module):
  """Multi-head dot-product attention.

  Submodules ``query``, ``key``, ``value`` (``LinearGeneral`` with kernels
  ``(in, num_heads, head_dim)``) and ``out`` (kernel ``(num_heads,
  head_dim, out_features)``), created in that order. With ``decode=True``,
  :meth:`init_cache` adds ``cached_key``, ``cached_value`` and
  ``cache_index`` (``nnx.Cache``) for autoregressive decoding.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.MultiHeadAttention(
  ...   num_heads=2, in_features=6, decode=False, rngs=nnx.Rngs(0)
  ... )
  >>> layer(jnp.ones((1, 4, 6))).shape
  (1, 4, 6)

  Args:
    num_heads: number of heads; ``qkv_features`` must be divisible by it.
    in_features: size of the query input features.
    qkv_features: size of queries, keys and values (default
      ``in_features``).
    out_features: size of the output (default ``in_features``).
    in_kv_features: size of the key/value input features (default
      ``in_features``).
    dtype: the dtype of the computation.
    param_dtype: the dtype passed to parameter initializers.
    broadcast_dropout: use one dropout mask across batch dimensions.
    dropout_rate: dropout rate of the attention weights.
    deterministic: if True, no dropout (may be passed when calling).
    precision: numerical precision of the computation.
    kernel_init: initializer of the projection kernels.
    out_kernel_init: initializer of the output kernel (default
      ``kernel_init``).
    bias_init: initializer of the biases.
    out_bias_init: initializer of the output bias (default ``bias_init``).
    use_bias: whether the projections have biases.
    attention_fn: the attention function, default
      :func:`dot_product_attention`.
    decode: whether to run in autoregressive decoding mode.
    normalize_qk: apply a LayerNorm (``query_ln``, ``key_ln``) to queries
      and keys.
    qkv_dot_general: dot product of the query/key/value projections.
    out_dot_general: dot product of the output projection.
    qkv_dot_general_cls: class of the query/key/value dot product.
    out_dot_general_cls: class of the output dot product.
    rngs: rng key container.
    keep_rngs: keep a dropout stream in the layer (when ``dropout_rate >
      0``).
    kernel_metadata: extra metadata of the kernels.
    out_kernel_metadata: extra metadata of the output kernel.
    bias_metadata: extra metadata of the biases.
    out_bias_metadata: extra metadata of the output bias.
  """

  def __init__(
    self,
    num_heads: int,
    in_features: int,
    qkv_features: _OptInt = None,
    out_features: _OptInt = None,
    num_kv_heads: _OptInt = None,
    in_kv_features: _OptInt = None,
    *,
    dtype=None,
    param_dtype=jnp.float32,
    broadcast_dropout: bool = True,
    dropout_rate: float = 0.0,
    deterministic: bool | None = None,
    precision=None,
    kernel_init=default_kernel_init,
    out_kernel_init=None,
    bias_init=initializers.zeros_init(),
    out_bias_init=None,
    use_bias: bool = True,
    attention_fn: _DotGeneral = dot_product_attention,
    decode: _OptBool = None,
    normalize_qk: bool = False,
    qkv_promote_dtype=dtypes.promote_dtype,
    out_promote_dtype: PromoteDtypeFn = dtypes.promote_dtype,
    ln_promote_dtype: PromoteDtypeFn = dtypes.promote_dtype,
    qkv_dot_general: _DotGeneral | None = None,
    out_dot_general: _DotGeneral | None = None,
    qkv_dot_general_cls: tp.Callable[[], _DotGeneral] | None = None,
    out_dot_general_cls: tp.Callable[[], _DotGeneral] | None = None,
    rngs: nnx.Rngs,
    keep_rngs: bool = True,
    kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    out_kernel_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    out_bias_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    query_ln_scale_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    key_ln_scale_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    qkv_features = in_features if qkv_features is None else qkv_features
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    if qkv_features % num_heads != 0:
      raise ValueError(
        f'Memory dimension ({qkv_features}) must be divisible by '
        f"'num_heads' heads ({num_heads})."
      )
    if num_heads % num_kv_heads != 0:
      raise ValueError(
        f'num_heads ({num_heads}) must be divisible by num_kv_heads '
        f'({num_kv_heads}).'
      )
    # Stored settings, in the order the module lists them.
    settings = dict(
      num_heads=num_heads,
      in_features=in_features,
      qkv_features=qkv_features,
      out_features=in_features if out_features is None else out_features,
      in_kv_features=in_features if in_kv_features is None else in_kv_features,
      num_kv_heads=num_kv_heads,
      dtype=dtype,
      param_dtype=param_dtype,
      broadcast_dropout=broadcast_dropout,
      dropout_rate=dropout_rate,
      deterministic=deterministic,
      precision=precision,
      use_bias=use_bias,
      attention_fn=attention_fn,
      decode=decode,
      normalize_qk=normalize_qk,
      qkv_promote_dtype=qkv_promote_dtype,
      out_promote_dtype=out_promote_dtype,
      ln_promote_dtype=ln_promote_dtype,
      qkv_dot_general=qkv_dot_general,
      out_dot_general=out_dot_general,
      qkv_dot_general_cls=qkv_dot_general_cls,
      out_dot_general_cls=out_dot_general_cls,
      head_dim=qkv_features // num_heads,
    )
    for name, value in settings.items():
      setattr(self, name, value)

    def projection(in_feats, heads):
      # Keys come from ``rngs.params()``: query, key, value, then out.
      return LinearGeneral(
        in_feats,
        (heads, self.head_dim),
        dtype=dtype,
        param_dtype=param_dtype,
        kernel_init=kernel_init,
        bias_init=bias_init,
        use_bias=use_bias,
        precision=precision,
        promote_dtype=qkv_promote_dtype,
        dot_general=qkv_dot_general,
        dot_general_cls=qkv_dot_general_cls,
        rngs=rngs,
        kernel_metadata=kernel_metadata,
        bias_metadata=bias_metadata,
      )

    self.query = projection(in_features, num_heads)
    self.key = projection(self.in_kv_features, num_kv_heads)
    self.value = projection(self.in_kv_features, num_kv_heads)

    def qk_norm(metadata):
      if not normalize_qk:
        return optional_data(None)
      return LayerNorm(
        self.head_dim,
        use_bias=False,
        dtype=dtype,
        param_dtype=param_dtype,
        promote_dtype=ln_promote_dtype,
        rngs=rngs,
        scale_metadata=metadata,
      )

    self.query_ln = qk_norm(query_ln_scale_metadata)
    self.key_ln = qk_norm(key_ln_scale_metadata)
    self.out = LinearGeneral(
      in_features=(num_heads, self.head_dim),
      out_features=self.out_features,
      axis=(-2, -1),
      kernel_init=out_kernel_init or kernel_init,
      bias_init=out_bias_init or bias_init,
      use_bias=use_bias,
      dtype=dtype,
      param_dtype=param_dtype,
      precision=precision,
      promote_dtype=out_promote_dtype,
      dot_general=out_dot_general,
      dot_general_cls=out_dot_general_cls,
      rngs=rngs,
      kernel_metadata=out_kernel_metadata or kernel_metadata,
      bias_metadata=out_bias_metadata or bias_metadata,
    )
    if keep_rngs and dropout_rate > 0:
      self.rngs = optional_data(fork_stream(rngs, 'dropout'))
    else:
      self.rngs = optional_data(None)
    self.cached_key = optional_data(None)
    self.cached_value = optional_data(None)
    self.cache_index = optional_data(None)

  def set_view(
    self,
    deterministic: bool | None = None,
    decode: bool | None = None,
    batch_size: int | Shape | None = None,
    max_length: int | None = None,
  ):
    """Sets the modes ``nnx.view`` asks for (None leaves one unchanged).

    ``nnx.view_info`` shows the arguments with these descriptions; with
    ``batch_size`` and ``max_length`` the decoding cache is created too.

    Args:
      deterministic: if True, the module is set to deterministic mode.
      decode: if True, the module is set to decode mode.
      batch_size: the batch size to use for the cache.
      max_length: the max length to use for the cache.
    """
    for name, mode in (('deterministic', deterministic), ('decode', decode)):
      if mode is not None:
        setattr(self, name, mode)
    if (batch_size is None) != (max_length is None):
      raise ValueError(
        'set_view needs both batch_size and max_length to create the '
        'decoding cache.'
      )
    if batch_size is not None:
      batch = (batch_size,) if isinstance(batch_size, int) else batch_size
      self.init_cache((*batch, max_length, self.in_features))

  def _decode_step(self, key, value, mask):
    """Appends one step's ``key`` and ``value`` to the cache.

    Returns the whole cached keys and values and ``mask`` narrowed to the
    slots written so far.
    """
    caches = (self.cached_key, self.cached_value, self.cache_index)
    if any(c is None for c in caches):
      raise ValueError(
        'Autoregressive cache not initialized (decoding writes into it): '
        'call ``init_cache`` first.'
      )
    *batch_dims, max_length, num_heads, depth = self.cached_key.shape
    expected = (*batch_dims, 1, num_heads, depth)
    if key.shape != expected:
      raise ValueError(
        f'Autoregressive cache shape error: a decode step needs keys of '
        f'shape {expected}, got {key.shape}.'
      )
    position = self.cache_index[...]
    start = _attention.cache_step_indices(position, len(batch_dims))
    self.cached_key[...] = lax.dynamic_update_slice(
      self.cached_key[...], key, start
    )
    self.cached_value[...] = lax.dynamic_update_slice(
      self.cached_value[...], value, start
    )
    self.cache_index[...] = position + 1
    written = _attention.cache_step_mask(position, batch_dims, max_length)
    return (
      self.cached_key[...],
      self.cached_value[...],
      combine_masks(mask, written),
    )

  def __call__(
    self,
    inputs_q: Array,
    inputs_k: _OptArray = None,
    inputs_v: _OptArray = None,
    *,
    mask: Array | None = None,
    deterministic: _OptBool = None,
    rngs=None,
    sow_weights: bool = False,
    decode: bool | None = None,
    is_causal=False,
    out_sharding=None,
    qkv_sharding=None,
  ) -> Array:
    """Applies multi-head attention.

    Args:
      inputs_q: queries input ``[batch..., q_length, in_features]``.
      inputs_k: keys input (default ``inputs_q``: self-attention).
      inputs_v: values input (default ``inputs_k``).
      mask: boolean mask ``[batch..., heads, q_length, kv_length]``.
      deterministic: overrides the attribute of the same name.
      rngs: dropout rngs, overriding the layer's own stream.
      sow_weights: sow the attention weights as ``attention_weights``.
      decode: overrides the attribute of the same name.
      is_causal: also mask keys after each query position (passed to
        ``attention_fn``).
      out_sharding: sharding of the output projection's result (explicit
        sharding mode).
      qkv_sharding: sharding of the query, key and value projections'
        results.

    Returns:
      The output ``[batch..., q_length, out_features]``.
    """
    inputs_k, inputs_v = _attention.attention_inputs(
      inputs_q, inputs_k, inputs_v
    )

    if inputs_q.shape[-1] != self.in_features:
      raise ValueError(
        f'Incompatible input dimension, got {inputs_q.shape[-1]} '
        f'but module expects {self.in_features}.'
      )

    query, key, value = (
      proj(x, out_sharding=qkv_sharding)
      for proj, x in (
        (self.query, inputs_q),
        (self.key, inputs_k),
        (self.value, inputs_v),
      )
    )

    if self.normalize_qk:
      query = self.query_ln(query)
      key = self.key_ln(key)

    decode = first_from(
      decode,
      self.decode,
      error_msg='No `decode` argument was provided to MultiHeadAttention '
      'as either a __call__ argument, class attribute, or nnx.flag.',
    )
    if decode:
      key, value, mask = self._decode_step(key, value, mask)

    # Dropout needs a decision (argument, attribute or nnx.flag) and keys.
    dropout_rng = None
    if self.dropout_rate <= 0.0:
      deterministic = True
    else:
      deterministic = first_from(
        deterministic,
        self.deterministic,
        error_msg='No `deterministic` argument was provided to '
        'MultiHeadAttention as either a __call__ argument, class '
        'attribute, or nnx.flag.',
      )
    if not deterministic:
      rngs = first_from(
        rngs,
        self.rngs,
        error_msg='`deterministic` is False, but no `rngs` argument was '
        'provided to MultiHeadAttention as either a __call__ argument '
        'or class attribute.',
      )
      dropout_rng = key_from(rngs, 'dropout')

    options = {k: getattr(self, k) for k in _attention.ATTENTION_FIELDS}
    x = self.attention_fn(
      *(query, key, value),
      **options,
      module=self if sow_weights else None,
      mask=mask,
      deterministic=deterministic,
      dropout_rng=dropout_rng,
      is_causal=is_causal,
    )
    return self.out(x, out_sharding=out_sharding)

  def init_cache(self, input_shape: tuple[int, ...], dtype=jnp.float32):
    """Creates the decoding cache for inputs of shape ``input_shape``.

    ``input_shape`` is ``(*batch, max_length, features)``; the cache arrays
    are ``(*batch, max_length, num_heads, head_dim)`` zeros and
    ``cache_index`` is an int32 scalar.

    >>> from flax import nnx
    >>> import jax.numpy as jnp
    >>> layer = nnx.MultiHeadAttention(
    ...   num_heads=2, in_features=4, decode=True, rngs=nnx.Rngs(0)
    ... )
    >>> layer.init_cache((1, 8, 4))
    >>> layer.cached_key.shape
    (1, 8, 2, 2)
    """
    cache_shape = (*input_shape[:-1], self.num_kv_heads, self.head_dim)
    self.cached_key = nnx.Cache(jnp.zeros(cache_shape, dtype))
    self.cached_value = nnx.Cache(jnp.zeros(cache_shape, dtype))
    self.cache_index = nnx.Cache(jnp.array(0, dtype=jnp.int32))
