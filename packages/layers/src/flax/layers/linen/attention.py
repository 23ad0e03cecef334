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
import warnings
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
from flax.layers.dtypes import F32, MaybeDtype
from flax.layers.initializers import zeros_init
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


_DISCUSSION = 'https://github.com/google/flax/discussions/3389'
_INPUTS_KV_DEPRECATED = (
  'The inputs_kv arg will be deprecated soon. Use inputs_k and inputs_v '
  f'instead. See {_DISCUSSION} for more information.'
)
_V_LOOKS_LIKE_MASK = (
  'You are passing an array of shape {shape} to the `inputs_v` arg, when '
  'you may have intended to pass it to the `mask` arg. As of Flax version '
  "0.7.4, the function signature of MultiHeadDotProductAttention's "
  '`__call__` method has changed to `__call__(inputs_q, inputs_k=None, '
  'inputs_v=None, *, inputs_kv=None, mask=None, deterministic=None)`. Use '
  f'the kwarg `mask` instead. See {_DISCUSSION} and read the docstring for '
  'more information.'
)
_SELF_ATTENTION_DEPRECATED = (
  'SelfAttention will be deprecated soon. Use '
  '`MultiHeadDotProductAttention.__call__(inputs_q)` instead. See '
  f'{_DISCUSSION} for more information.'
)


def _looks_like_mask(inputs_v) -> bool:
  shape = getattr(inputs_v, 'shape', ())
  return len(shape) >= 2 and shape[-1] == shape[-2]


_OptInt = int | None
_OptInit = Initializer | None
_OptArray = Array | None
_DotGeneral = Callable[..., Array]
_EinsumFactory = Callable[..., Callable[..., Array]]
_OptDotGeneral = _DotGeneral | None
_OptBool = bool | None


def _projection(mdl, which: str, **kwargs) -> DenseGeneral:
  """A ``DenseGeneral`` of ``mdl`` with the settings all projections share.

  ``which`` (``'qkv'`` or ``'out'``) picks the dot-product fields.
  """
  return DenseGeneral(
    dtype=mdl.dtype,
    param_dtype=mdl.param_dtype,
    use_bias=mdl.use_bias,
    precision=mdl.precision,
    dot_general=getattr(mdl, f'{which}_dot_general'),
    dot_general_cls=getattr(mdl, f'{which}_dot_general_cls'),
    **kwargs,
  )


class MultiHeadDotProductAttention(Module):
  """Attention with ``num_heads`` heads and learned q/k/v/out projections.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=6)
    >>> q, kv = jnp.zeros((1, 3, 4)), jnp.zeros((1, 5, 4))
    >>> v = layer.init(jax.random.key(1), q, kv)
    >>> v['params']['key']['kernel'].shape, layer.apply(v, q, kv).shape
    ((4, 2, 3), (1, 3, 4))

  Fields ``qkv_dot_general(_cls)`` and ``out_dot_general(_cls)`` replace
  the dot products of the input and output projections;
  ``qk_attn_weights_einsum_cls`` and ``attn_weights_value_einsum_cls``
  build the two einsums handed to ``attention_fn``
  (``qk_attn_weights_einsum``, ``attn_weights_value_einsum``).
  ``normalize_qk`` adds ``query_ln`` / ``key_ln`` LayerNorms (no bias).
  """

  num_heads: int
  """Number of heads; must divide ``qkv_features``."""
  dtype: MaybeDtype = None
  """Computation dtype (None: promoted from inputs and params)."""
  param_dtype: Dtype = F32
  """Dtype the parameters are created in."""
  qkv_features: _OptInt = None
  """Width of queries, keys and values (default: the query input's)."""
  out_features: _OptInt = None
  """Width of the output (default: the query input's)."""
  broadcast_dropout: bool = True
  """One dropout mask for all batch positions."""
  dropout_rate: float = 0.0
  """Dropout rate of the attention weights."""
  deterministic: bool | None = None
  """No dropout when True (may be given at call time instead)."""
  precision: Any = None
  """``jax.lax.Precision`` of the projections and the attention."""
  kernel_init: Initializer = default_kernel_init
  """Creates the projection kernels."""
  out_kernel_init: _OptInit = None
  """Creates the ``out`` kernel (default: ``kernel_init``)."""
  bias_init: Initializer = zeros_init()
  """Creates the projection biases."""
  out_bias_init: _OptInit = None
  """Creates the ``out`` bias (default: ``bias_init``)."""
  use_bias: bool = True
  """Whether the projections have biases."""
  attention_fn: _DotGeneral = dot_product_attention
  """The attention function (``dot_product_attention``'s signature)."""
  decode: bool = False
  """Keep an autoregressive key/value cache in ``cache``."""
  normalize_qk: bool = False
  """LayerNorm queries and keys (arxiv.org/abs/2302.05442)."""
  force_fp32_for_softmax: bool = False
  """Compute the softmax in float32."""
  qkv_dot_general: _OptDotGeneral = None
  out_dot_general: _OptDotGeneral = None
  qkv_dot_general_cls: Callable[[], _DotGeneral] | None = None
  out_dot_general_cls: Callable[[], _DotGeneral] | None = None
  qk_attn_weights_einsum_cls: _EinsumFactory | None = None
  attn_weights_value_einsum_cls: _EinsumFactory | None = None

  @compact
  def __call__(
    self,
    inputs_q: Array,
    inputs_k: _OptArray = None,
    inputs_v: _OptArray = None,
    *,
    inputs_kv: Array | None = None,
    mask: _OptArray = None,
    deterministic: _OptBool = None,
    dropout_rng=None,
    sow_weights: bool = False,
  ):
    """Attends from ``inputs_q`` to ``inputs_k`` / ``inputs_v``.

    Inputs are ``[batch..., length, features]``. Keys default to the
    queries and values to the keys; ``inputs_kv`` (older form) sets both.
    ``mask`` is ``[batch..., heads, q_length, kv_length]``. Dropout uses
    ``dropout_rng``, else the ``'dropout'`` stream; ``sow_weights`` sows
    the weights into ``intermediates``. Returns ``[batch..., length,
    out_features]``.
    """
    value_given = inputs_v
    inputs_k, inputs_v = attn_math.attention_inputs(
      inputs_q, inputs_k, inputs_v, inputs_kv
    )
    if inputs_kv is not None:
      warnings.warn(_INPUTS_KV_DEPRECATED, DeprecationWarning)
    elif _looks_like_mask(value_given):
      # The third positional argument was the mask before the keys and
      # values were split; a square trailing pair of axes suggests one.
      warnings.warn(
        _V_LOOKS_LIKE_MASK.format(shape=inputs_v.shape), DeprecationWarning
      )
    width = inputs_q.shape[-1]
    qkv_features = self.qkv_features or width
    if qkv_features % self.num_heads:
      raise AssertionError(
        f'Memory dimension ({qkv_features}) must be divisible by number of'
        f' heads ({self.num_heads}).'
      )
    heads = (self.num_heads, qkv_features // self.num_heads)
    inits = {'kernel_init': self.kernel_init, 'bias_init': self.bias_init}
    # Each projection gives [batch..., length, n_heads, head_dim].
    query, key, value = (
      _projection(self, 'qkv', features=heads, axis=-1, name=name, **inits)(x)
      for name, x in zip(
        ('query', 'key', 'value'), (inputs_q, inputs_k, inputs_v)
      )
    )
    if self.normalize_qk:
      query, key = (
        LayerNorm(
          name=name,
          use_bias=False,
          dtype=self.dtype,
          param_dtype=self.param_dtype,
        )(x)
        for name, x in (('query_ln', query), ('key_ln', key))
      )
    if self.decode:
      key, value, mask = self._decode_step(query, key, value, mask)

    # Dropout needs a decision (field or argument) and a key.
    no_dropout = True
    if self.dropout_rate > 0.0:
      no_dropout = merge_param(
        'deterministic', self.deterministic, deterministic
      )
      if not no_dropout and dropout_rng is None:
        dropout_rng = self.make_rng('dropout')
    options = {k: getattr(self, k) for k in attn_math.ATTENTION_FIELDS}
    options.update(
      mask=mask,
      dropout_rng=dropout_rng,
      deterministic=no_dropout,
      force_fp32_for_softmax=self.force_fp32_for_softmax,
    )
    for option in ('qk_attn_weights_einsum', 'attn_weights_value_einsum'):
      factory = getattr(self, f'{option}_cls')
      if factory is not None:
        options[option] = factory()
    sower = self if sow_weights else None
    x = _call_attention(self.attention_fn, query, key, value, options, sower)
    return _projection(
      self,
      'out',
      features=self.out_features or width,
      axis=(-2, -1),
      kernel_init=self.out_kernel_init or self.kernel_init,
      bias_init=self.out_bias_init or self.bias_init,
      name='out',
    )(x)

  def _decode_step(self, query, key, value, mask):
    """Creates (at init) or advances the autoregressive cache."""
    ready = self.has_variable('cache', 'cached_key')
    cached_key, cached_value = (
      self.variable('cache', f'cached_{n}', jnp.zeros, x.shape, x.dtype)
      for n, x in (('key', key), ('value', value))
    )
    cache_index = self.variable(
      'cache', 'cache_index', lambda: jnp.array(0, dtype=jnp.int32)
    )
    if not ready:
      return key, value, mask
    *batch_dims, max_length, num_heads, depth = cached_key.value.shape
    expected = (*batch_dims, 1, num_heads, depth)
    if expected != query.shape:
      raise ValueError(
        'Autoregressive cache shape error, '
        f'expected query shape {expected} instead got {query.shape}.'
      )
    position = cache_index.value
    start = attn_math.cache_step_indices(position, len(batch_dims))
    for cached, new in ((cached_key, key), (cached_value, value)):
      cached.value = lax.dynamic_update_slice(cached.value, new, start)
    cache_index.value = position + 1
    # The one query attends to the steps written so far, not to the zeros
    # still filling the rest of the cache.
    written = attn_math.cache_step_mask(position, batch_dims, max_length)
    return cached_key.value, cached_value.value, combine_masks(mask, written)


class MultiHeadAttention(MultiHeadDotProductAttention):
  """Another name of :class:`MultiHeadDotProductAttention`.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.MultiHeadAttention(num_heads=3)
    >>> x = jnp.zeros((2, 4, 6))
    >>> layer.apply(layer.init(jax.random.key(1), x), x).shape
    (2, 4, 6)
  """


class SelfAttention(MultiHeadDotProductAttention):
  """:class:`MultiHeadDotProductAttention` of a sequence with itself.

  Deprecated: each call warns (``DeprecationWarning``); call
  ``MultiHeadDotProductAttention`` with the queries alone instead.

  Example::

    >>> import warnings
    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.SelfAttention(num_heads=1)
    >>> x = jnp.zeros((2, 5))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...   warnings.simplefilter('always')
    ...   y = layer.apply(layer.init(jax.random.key(1), x), x)
    >>> y.shape, caught[0].category.__name__
    ((2, 5), 'DeprecationWarning')
  """

  @compact
  def __call__(  # type: ignore[override]
    self,
    inputs_q: Array,
    mask: _OptArray = None,
    deterministic: _OptBool = None,
    dropout_rng=None,
    sow_weights: bool = False,
  ):
    """Attends from ``inputs_q`` to itself (see the parent's call)."""
    warnings.warn(_SELF_ATTENTION_DEPRECATED, DeprecationWarning)
    options = dict(deterministic=deterministic, dropout_rng=dropout_rng)
    return super().__call__(
      inputs_q, mask=mask, sow_weights=sow_weights, **options
    )
