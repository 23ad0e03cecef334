"""Linen attention: MultiHeadDotProductAttention, SelfAttention and the
attention functions.

The projections are ``DenseGeneral`` submodules named ``query``, ``key``,
``value`` (kernels ``(in, heads, head_dim)``) and ``out`` (kernel
``(heads, head_dim, out)``). With ``decode=True`` the keys and values are
cached in the ``cache`` collection (``cached_key``, ``cached_value``,
``cache_index``).
"""

import functools
import inspect
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from jax import lax

from flax.layers import attention as attn_math
from flax.layers import initializers
from flax.layers.attention import combine_masks as combine_masks
from flax.layers.attention import dot_product_attention as dot_product_attention
from flax.layers.attention import (
  dot_product_attention_weights as dot_product_attention_weights,
)
from flax.layers.attention import make_attention_mask as make_attention_mask
from flax.layers.attention import make_causal_mask as make_causal_mask
from flax.layers.dtypes import promote_dtype as promote_dtype
from flax.layers.linen.linear import DenseGeneral, default_kernel_init
from flax.layers.linen.normalization import LayerNorm
from flax.linen import Module, compact, merge_param

Array = Any
Dtype = Any
Initializer = initializers.Initializer


@functools.lru_cache(maxsize=64)
def _named_parameters(fn) -> frozenset | None:
  """Names of the parameters of ``fn`` (None if it has no signature)."""
  try:
    params = inspect.signature(fn).parameters
  except (TypeError, ValueError):
    return None
  return frozenset(params)


def _call_attention(fn, query, key, value, options, module):
  """Calls an attention function with the options it names.

  An option is passed only when ``fn`` has a parameter of that name (a
  ``**kwargs`` catch-all receives none of them); ``module`` is passed
  whenever weights are sown.
  """
  try:
    names = _named_parameters(fn)
  except TypeError:  # unhashable callable
    names = _named_parameters.__wrapped__(fn)
  if names is not None:
    options = {k: v for k, v in options.items() if k in names}
  if module is not None:
    options['module'] = module
  return fn(query, key, value, **options)


class MultiHeadDotProductAttention(Module):
  """Multi-head dot-product attention.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.MultiHeadDotProductAttention(num_heads=8, qkv_features=16)
    >>> q = jnp.ones((4, 3, 5))
    >>> variables = layer.init(jax.random.key(0), q)
    >>> jax.tree_util.tree_map(jnp.shape, variables['params']['query'])
    {'bias': (8, 2), 'kernel': (5, 8, 2)}
    >>> layer.apply(variables, q).shape
    (4, 3, 5)

  Attributes:
    num_heads: number of attention heads. Features (i.e. inputs_q.shape[-1])
      should be divisible by the number of heads.
    dtype: the dtype of the computation (default: infer from inputs and
      params).
    param_dtype: the dtype passed to parameter initializers.
    qkv_features: dimension of the key, query, and value.
    out_features: dimension of the last projection.
    broadcast_dropout: use a broadcasted dropout along batch dims.
    dropout_rate: dropout rate.
    deterministic: if false, the attention weight is masked randomly using
      dropout, whereas if true, the attention weights are deterministic.
    precision: numerical precision of the computation.
    kernel_init: initializer for the kernel of the Dense layers.
    out_kernel_init: initializer of the output kernel (default:
      ``kernel_init``).
    bias_init: initializer for the bias of the Dense layers.
    out_bias_init: initializer of the output bias (default: ``bias_init``).
    use_bias: whether pointwise QKVO dense transforms use bias.
    attention_fn: ``dot_product_attention`` or a compatible function.
    decode: whether to prepare and use an autoregressive cache.
    normalize_qk: should QK normalization be applied
      (arxiv.org/abs/2302.05442).
    force_fp32_for_softmax: compute the softmax in float32.
    qkv_dot_general: ``dot_general`` of the QKV projections.
    out_dot_general: ``dot_general`` of the output projection.
    qkv_dot_general_cls: class whose instances replace ``qkv_dot_general``.
    out_dot_general_cls: class whose instances replace ``out_dot_general``.
    qk_attn_weights_einsum_cls: factory of the einsum computing the
      attention logits, handed to ``attention_fn`` as
      ``qk_attn_weights_einsum``.
    attn_weights_value_einsum_cls: factory of the einsum weighting the
      values, handed as ``attn_weights_value_einsum``.
  """

  num_heads: int
  dtype: Dtype | None = None
  param_dtype: Dtype = jnp.float32
  qkv_features: int | None = None
  out_features: int | None = None
  broadcast_dropout: bool = True
  dropout_rate: float = 0.0
  deterministic: bool | None = None
  precision: Any = None
  kernel_init: Initializer = default_kernel_init
  out_kernel_init: Initializer | None = None
  bias_init: Initializer = initializers.zeros_init()
  out_bias_init: Initializer | None = None
  use_bias: bool = True
  attention_fn: Callable[..., Array] = dot_product_attention
  decode: bool = False
  normalize_qk: bool = False
  force_fp32_for_softmax: bool = False
  qkv_dot_general: Any = None
  out_dot_general: Any = None
  qkv_dot_general_cls: Any = None
  out_dot_general_cls: Any = None
  qk_attn_weights_einsum_cls: Callable[..., Callable[..., Array]] | None = None
  attn_weights_value_einsum_cls: Callable[..., Callable[..., Array]] | None = (
    None
  )

  @compact
  def __call__(
    self,
    inputs_q: Array,
    inputs_k: Array | None = None,
    inputs_v: Array | None = None,
    *,
    inputs_kv: Array | None = None,
    mask: Array | None = None,
    deterministic: bool | None = None,
    dropout_rng=None,
    sow_weights: bool = False,
  ):
    """Applies multi-head dot product attention on the input data.

    Projects the inputs into multi-headed query, key, and value vectors,
    applies dot-product attention and projects the results to an output
    vector.

    If both ``inputs_k`` and ``inputs_v`` are None, they take the value of
    ``inputs_q`` (self attention); if only ``inputs_v`` is None it takes the
    value of ``inputs_k``.

    Args:
      inputs_q: input queries of shape ``[batch..., length, features]``.
      inputs_k: key of shape ``[batch..., length, features]``.
      inputs_v: values of shape ``[batch..., length, features]``.
      inputs_kv: key/values (older calling form; sets both ``inputs_k`` and
        ``inputs_v``).
      mask: attention mask of shape ``[batch..., num_heads, q_length,
        kv_length]``.
      deterministic: if false, the attention weight is masked randomly using
        dropout, whereas if true, the attention weights are deterministic.
      dropout_rng: optional rng key passed to the attention layer's dropout
        mask. Otherwise, ``self.make_rng('dropout')`` is used instead.
      sow_weights: if True, the attention weights are sowed into the
        'intermediates' collection.

    Returns:
      Output of shape ``[batch..., length, out_features]``.
    """
    if inputs_kv is not None:
      if inputs_k is not None or inputs_v is not None:
        raise ValueError(
          'If either `inputs_k` or `inputs_v` is not None, '
          '`inputs_kv` must be None. If `inputs_kv` is not None, both '
          '`inputs_k` and `inputs_v` must be None. We recommend using '
          '`inputs_k` and `inputs_v` args, since `inputs_kv` will be '
          'deprecated.'
        )
      inputs_k = inputs_v = inputs_kv
    else:
      if inputs_k is None:
        if inputs_v is not None:
          raise ValueError(
            '`inputs_k` cannot be None if `inputs_v` is not None. '
            'To have both `inputs_k` and `inputs_v` be the same value, pass '
            'in the value to `inputs_k` and leave `inputs_v` as None.'
          )
        inputs_k = inputs_q
      if inputs_v is None:
        inputs_v = inputs_k

    width = inputs_q.shape[-1]
    qkv_features = self.qkv_features or width
    if qkv_features % self.num_heads:
      raise AssertionError(
        f'Memory dimension ({qkv_features}) must be divisible by number of'
        f' heads ({self.num_heads}).'
      )
    heads = (self.num_heads, qkv_features // self.num_heads)
    # The three projections share every setting but their name;
    # [batch..., length, n_heads, head_dim]
    query, key, value = (
      DenseGeneral(
        features=heads,
        axis=-1,
        dtype=self.dtype,
        param_dtype=self.param_dtype,
        kernel_init=self.kernel_init,
        bias_init=self.bias_init,
        use_bias=self.use_bias,
        precision=self.precision,
        dot_general=self.qkv_dot_general,
        dot_general_cls=self.qkv_dot_general_cls,
        name=name,
      )(x)
      for name, x in (
        ('query', inputs_q),
        ('key', inputs_k),
        ('value', inputs_v),
      )
    )

    if self.normalize_qk:
      query = LayerNorm(
        name='query_ln',
        use_bias=False,
        dtype=self.dtype,
        param_dtype=self.param_dtype,
      )(query)
      key = LayerNorm(
        name='key_ln',
        use_bias=False,
        dtype=self.dtype,
        param_dtype=self.param_dtype,
      )(key)

    if self.decode:
      key, value, mask = self._decode_step(query, key, value, mask)

    if self.dropout_rate > 0.0:
      m_deterministic = merge_param(
        'deterministic', self.deterministic, deterministic
      )
      if not m_deterministic and dropout_rng is None:
        dropout_rng = self.make_rng('dropout')
    else:
      m_deterministic = True

    options = dict(
      mask=mask,
      dropout_rng=dropout_rng,
      dropout_rate=self.dropout_rate,
      broadcast_dropout=self.broadcast_dropout,
      deterministic=m_deterministic,
      dtype=self.dtype,
      precision=self.precision,
      force_fp32_for_softmax=self.force_fp32_for_softmax,
    )
    for option, factory in (
      ('qk_attn_weights_einsum', self.qk_attn_weights_einsum_cls),
      ('attn_weights_value_einsum', self.attn_weights_value_einsum_cls),
    ):
      if factory is not None:
        options[option] = factory()
    x = _call_attention(
      self.attention_fn,
      query,
      key,
      value,
      options,
      self if sow_weights else None,
    )

    return DenseGeneral(
      features=self.out_features or width,
      axis=(-2, -1),
      kernel_init=self.out_kernel_init or self.kernel_init,
      bias_init=self.out_bias_init or self.bias_init,
      use_bias=self.use_bias,
      dtype=self.dtype,
      param_dtype=self.param_dtype,
      precision=self.precision,
      dot_general=self.out_dot_general,
      dot_general_cls=self.out_dot_general_cls,
      name='out',
    )(x)

  def _decode_step(self, query, key, value, mask):
    """Creates (at init) or updates the autoregressive cache."""
    is_initialized = self.has_variable('cache', 'cached_key')
    cached_key = self.variable(
      'cache', 'cached_key', jnp.zeros, key.shape, key.dtype
    )
    cached_value = self.variable(
      'cache', 'cached_value', jnp.zeros, value.shape, value.dtype
    )
    cache_index = self.variable(
      'cache', 'cache_index', lambda: jnp.array(0, dtype=jnp.int32)
    )
    if not is_initialized:
      return key, value, mask
    *batch_dims, max_length, num_heads, depth = cached_key.value.shape
    expected = tuple(batch_dims) + (1, num_heads, depth)
    if expected != query.shape:
      raise ValueError(
        'Autoregressive cache shape error, '
        f'expected query shape {expected} instead got {query.shape}.'
      )
    cur_index = cache_index.value
    indices = attn_math.cache_step_indices(cur_index, len(batch_dims))
    key = lax.dynamic_update_slice(cached_key.value, key, indices)
    value = lax.dynamic_update_slice(cached_value.value, value, indices)
    cached_key.value = key
    cached_value.value = value
    cache_index.value = cache_index.value + 1
    # The single query position attends only to the positions generated so
    # far, not to the zeros that fill the rest of the cache.
    mask = combine_masks(
      mask, attn_math.cache_step_mask(cur_index, batch_dims, max_length)
    )
    return key, value, mask


class MultiHeadAttention(MultiHeadDotProductAttention):
  """Multi-head dot-product attention (same as
  :class:`MultiHeadDotProductAttention`).

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.MultiHeadAttention(num_heads=2, qkv_features=4)
    >>> x = jnp.ones((1, 3, 6))
    >>> variables = layer.init(jax.random.key(0), x)
    >>> layer.apply(variables, x).shape
    (1, 3, 6)
  """


class SelfAttention(MultiHeadDotProductAttention):
  """Self-attention special case of multi-head dot-product attention.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.SelfAttention(num_heads=2)
    >>> x = jnp.ones((1, 3, 4))
    >>> variables = layer.init(jax.random.key(0), x)
    >>> layer.apply(variables, x).shape
    (1, 3, 4)
  """

  @compact
  def __call__(  # type: ignore[override]
    self,
    inputs_q: Array,
    mask: Array | None = None,
    deterministic: bool | None = None,
    dropout_rng=None,
    sow_weights: bool = False,
  ):
    """Applies multi-head dot product self-attention on the input data.

    Args:
      inputs_q: input queries of shape ``[batch..., length, features]``.
      mask: attention mask of shape ``[batch..., num_heads, q_length,
        kv_length]``.
      deterministic: if false, the attention weight is masked randomly using
        dropout.
      dropout_rng: optional rng key for the dropout mask.
      sow_weights: sow the attention weights into 'intermediates'.

    Returns:
      Output of shape ``[batch..., length, out_features]``.
    """
    return super().__call__(
      inputs_q,
      mask=mask,
      deterministic=deterministic,
      dropout_rng=dropout_rng,
      sow_weights=sow_weights,
    )
