"""Linen attention: parameter tree, numerics, decode cache, dropout."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import errors
from flax import linen as nn

KEY = jax.random.key(0)


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def _softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _reference(params, q_in, kv_in, num_heads, mask=None):
  def proj(name, x):
    p = params[name]
    return np.einsum('...i,ihd->...hd', x, p['kernel']) + p['bias']

  q, k, v = proj('query', q_in), proj('key', kv_in), proj('value', kv_in)
  logits = np.einsum('...qhd,...khd->...hqk', q / np.sqrt(q.shape[-1]), k)
  if mask is not None:
    logits = np.where(mask, logits, np.finfo(np.float32).min)
  out = np.einsum('...hqk,...khd->...qhd', _softmax(logits), v)
  p = params['out']
  return np.einsum('...hd,hdo->...o', out, p['kernel']) + p['bias']


def test_mha_params_and_numerics():
  layer = nn.MultiHeadDotProductAttention(
    num_heads=2,
    qkv_features=8,
    out_features=5,
    bias_init=nn.initializers.normal(0.1),
  )
  q = jax.random.normal(KEY, (2, 3, 4))
  kv = jax.random.normal(jax.random.key(1), (2, 6, 7))
  v = layer.init(KEY, q, kv)
  assert shapes(v) == {
    'params': {
      'query': {'kernel': (4, 2, 4), 'bias': (2, 4)},
      'key': {'kernel': (7, 2, 4), 'bias': (2, 4)},
      'value': {'kernel': (7, 2, 4), 'bias': (2, 4)},
      'out': {'kernel': (2, 4, 5), 'bias': (5,)},
    }
  }
  params = jax.tree_util.tree_map(np.asarray, v['params'])
  mask = np.tril(np.ones((3, 6), bool))[None, None]
  y = layer.apply(v, q, kv, mask=mask)
  ref = _reference(params, np.asarray(q), np.asarray(kv), 2, mask)
  np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
  # Older call form: inputs_kv.
  with pytest.warns(
    DeprecationWarning, match='inputs_kv arg will be deprecated'
  ):
    y2 = layer.apply(v, q, inputs_kv=kv, mask=mask)
  np.testing.assert_allclose(y2, y, rtol=1e-6)


def test_self_attention_and_aliases():
  x = jax.random.normal(KEY, (2, 3, 4))
  mha = nn.MultiHeadDotProductAttention(num_heads=2)
  v = mha.init(KEY, x)
  assert shapes(v['params']['out']) == {'kernel': (2, 2, 4), 'bias': (4,)}
  y = mha.apply(v, x)
  with pytest.warns(
    DeprecationWarning, match='SelfAttention will be deprecated'
  ):
    y_self = nn.SelfAttention(num_heads=2).apply(v, x)
  np.testing.assert_allclose(y_self, y, rtol=1e-6)
  np.testing.assert_allclose(
    nn.MultiHeadAttention(num_heads=2).apply(v, x), y, rtol=1e-6
  )

  class Parent(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.MultiHeadAttention(num_heads=2)(x) + nn.SelfAttention(
        num_heads=2
      )(x)

  with pytest.warns(DeprecationWarning, match='SelfAttention will be'):
    variables = Parent().init(KEY, x)
  assert set(variables['params']) == {
    'MultiHeadAttention_0',
    'SelfAttention_0',
  }


def test_mha_errors():
  x = jnp.ones((1, 3, 6))
  with pytest.raises(
    AssertionError, match='must be divisible by number of heads'
  ):
    nn.MultiHeadDotProductAttention(num_heads=4).init(KEY, x)
  with pytest.raises(ValueError, match='`inputs_k` cannot be None'):
    nn.MultiHeadDotProductAttention(num_heads=2).init(KEY, x, inputs_v=x)
  with pytest.raises(ValueError, match='`inputs_kv` must be None'):
    nn.MultiHeadDotProductAttention(num_heads=2).init(KEY, x, x, inputs_kv=x)


def test_mha_dtype_and_normalize_qk():
  x = jnp.ones((1, 3, 4), jnp.bfloat16)
  y, v = nn.MultiHeadDotProductAttention(num_heads=2).init_with_output(KEY, x)
  assert y.dtype == jnp.float32
  y = nn.MultiHeadDotProductAttention(num_heads=2, dtype=jnp.bfloat16).apply(
    v, x
  )
  assert y.dtype == jnp.bfloat16
  v = nn.MultiHeadDotProductAttention(num_heads=2, normalize_qk=True).init(
    KEY, x
  )
  assert shapes(v['params']['query_ln']) == {'scale': (2,)}
  assert shapes(v['params']['key_ln']) == {'scale': (2,)}


def test_mha_decode_cache():
  layer = nn.MultiHeadDotProductAttention(
    num_heads=2, qkv_features=4, decode=True
  )
  full = jax.random.normal(KEY, (1, 4, 3))
  v = layer.init(KEY, full)
  assert shapes(v['cache']) == {
    'cached_key': (1, 4, 2, 2),
    'cached_value': (1, 4, 2, 2),
    'cache_index': (),
  }
  assert v['cache']['cache_index'].dtype == jnp.int32
  np.testing.assert_array_equal(v['cache']['cached_key'], 0)
  # Step-by-step decoding equals causal attention over the full sequence.
  ref = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4).apply(
    {'params': v['params']}, full, mask=nn.make_causal_mask(full[..., 0])
  )
  cache = v['cache']
  for t in range(4):
    y, upd = layer.apply(
      {'params': v['params'], 'cache': cache},
      full[:, t : t + 1],
      mutable=['cache'],
    )
    cache = upd['cache']
    np.testing.assert_allclose(y[:, 0], ref[:, t], rtol=1e-4, atol=1e-5)
  assert int(cache['cache_index']) == 4
  with pytest.raises(ValueError, match='Autoregressive cache shape error'):
    layer.apply(
      {'params': v['params'], 'cache': cache}, full, mutable=['cache']
    )


def test_mha_dropout_and_sow():
  layer = nn.MultiHeadDotProductAttention(num_heads=2, dropout_rate=0.5)
  x = jax.random.normal(KEY, (2, 3, 4))
  v = layer.init(KEY, x, deterministic=True)
  y_det = layer.apply(v, x, deterministic=True)
  y1 = layer.apply(
    v, x, deterministic=False, rngs={'dropout': jax.random.key(1)}
  )
  y2 = layer.apply(
    v, x, deterministic=False, rngs={'dropout': jax.random.key(2)}
  )
  assert not np.allclose(y1, y_det) and not np.allclose(y1, y2)
  y3 = layer.apply(v, x, deterministic=False, dropout_rng=jax.random.key(1))
  assert y3.shape == y1.shape
  with pytest.raises(ValueError):
    layer.apply(v, x)  # deterministic unset with dropout
  _, state = nn.MultiHeadDotProductAttention(num_heads=2).apply(
    v, x, sow_weights=True, mutable=['intermediates']
  )
  (w,) = state['intermediates']['attention_weights']
  assert w.shape == (2, 2, 3, 3)
  np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)


def test_custom_attention_fn_kwargs_filtered():
  seen = {}

  def attention_fn(q, k, v, mask=None):
    seen['mask'] = mask
    return nn.dot_product_attention(q, k, v, mask=mask)

  layer = nn.MultiHeadDotProductAttention(
    num_heads=2, attention_fn=attention_fn
  )
  layer.init(KEY, jnp.ones((1, 3, 4)))
  assert 'mask' in seen


def test_functions_exported():
  assert nn.dot_product_attention is nn.attention.dot_product_attention
  m = nn.make_attention_mask(jnp.ones((2, 3)), jnp.ones((2, 4)))
  assert m.shape == (2, 1, 3, 4)
  assert nn.combine_masks(None, m).shape == m.shape
  w = nn.dot_product_attention_weights(
    jnp.ones((1, 2, 1, 3)), jnp.ones((1, 2, 1, 3))
  )
  np.testing.assert_allclose(w, 0.5)


def test_custom_einsums_are_called_with_subscripts_and_operands():
  q = jnp.arange(24.0).reshape(1, 3, 2, 4) / 10
  seen = []

  def einsum(subscripts, a, b, **kwargs):
    seen.append((subscripts, a.shape, b.shape, sorted(kwargs)))
    return jnp.einsum(subscripts, a, b, **kwargs)

  y = nn.dot_product_attention(
    q, q, q, qk_attn_weights_einsum=einsum, attn_weights_value_einsum=einsum
  )
  np.testing.assert_allclose(y.sum(), 41.069374, rtol=1e-5)
  assert seen == [
    ('...qhd,...khd->...hqk', (1, 3, 2, 4), (1, 3, 2, 4), []),
    ('...hqk,...khd->...qhd', (1, 2, 3, 3), (1, 3, 2, 4), []),
  ]
  seen.clear()
  w = nn.dot_product_attention_weights(q, q, einsum=einsum)
  np.testing.assert_allclose(w.sum(), 6.0, rtol=1e-5)
  assert seen == [('...qhd,...khd->...hqk', (1, 3, 2, 4), (1, 3, 2, 4), [])]

  class Einsum:
    def __init__(self):
      seen.append('init')

    def __call__(self, subscripts, a, b):
      seen.append(subscripts)
      return jnp.einsum(subscripts, a, b)

  seen.clear()
  layer = nn.MultiHeadDotProductAttention(
    num_heads=2,
    qkv_features=4,
    qk_attn_weights_einsum_cls=Einsum,
    attn_weights_value_einsum_cls=Einsum,
  )
  y, _ = layer.init_with_output(KEY, jnp.ones((1, 3, 4)))
  assert y.shape == (1, 3, 4)
  assert seen == [
    'init',
    'init',
    '...qhd,...khd->...hqk',
    '...hqk,...khd->...qhd',
  ]


def test_custom_einsum_argument_errors():
  q = jnp.ones((1, 3, 2, 4))

  def dot_general(*args, **kwargs):
    return jax.lax.dot_general(*args, **kwargs)

  with pytest.raises(ValueError, match='must be specified together'):
    nn.dot_product_attention(q, q, q, qk_attn_weights_einsum=jnp.einsum)
  with pytest.raises(ValueError, match='must be specified together'):
    nn.dot_product_attention(
      q,
      q,
      q,
      einsum_dot_general=dot_general,
      attn_weights_value_einsum=jnp.einsum,
    )
  with pytest.raises(ValueError, match='must be specified together'):
    nn.MultiHeadDotProductAttention(
      num_heads=2, qk_attn_weights_einsum_cls=lambda: jnp.einsum
    ).init(KEY, jnp.ones((1, 3, 4)))
  with pytest.raises(
    ValueError,
    match='precision/einsum_dot_general and '
    'qk_attn_weights_einsum/attn_weights_value_einsum are mutually exclusive',
  ):
    nn.dot_product_attention(
      q,
      q,
      q,
      precision='highest',
      qk_attn_weights_einsum=jnp.einsum,
      attn_weights_value_einsum=jnp.einsum,
    )
  with pytest.raises(
    ValueError, match='precision/einsum_dot_general and einsum are mutually'
  ):
    nn.dot_product_attention_weights(
      q, q, einsum_dot_general=dot_general, einsum=jnp.einsum
    )


def test_complex_inputs():
  q = jnp.arange(24.0).reshape(1, 3, 2, 4) / 10
  qc = (q + 1j * q[..., ::-1]).astype(jnp.complex64)
  y = nn.dot_product_attention(qc, qc, qc)
  assert y.dtype == jnp.complex64
  np.testing.assert_allclose(y.sum(), 42.48521 + 12.71478j, rtol=1e-5)
  w = nn.dot_product_attention_weights(qc, qc)
  np.testing.assert_allclose(w.sum(), 6.0, rtol=1e-5, atol=1e-5)
  x = jnp.ones((1, 3, 4), jnp.complex64)
  layer = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4)
  y, v = layer.init_with_output(KEY, x)
  assert y.dtype == jnp.complex64
  np.testing.assert_allclose(y.sum(), 3.621581, rtol=1e-5, atol=1e-5)
  assert v['params']['query']['kernel'].dtype == jnp.float32
  layer = nn.MultiHeadDotProductAttention(
    num_heads=2, qkv_features=4, param_dtype=jnp.complex64
  )
  y, v = layer.init_with_output(KEY, x)
  assert v['params']['query']['kernel'].dtype == jnp.complex64
  np.testing.assert_allclose(
    y.sum(), 0.008781195 - 3.984109j, rtol=1e-5, atol=1e-5
  )


def test_inputs_kv_and_self_attention_deprecation():
  x = jnp.ones((1, 3, 4))
  layer = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4)
  with pytest.warns(DeprecationWarning, match='The inputs_kv arg will be'):
    v = layer.init(KEY, x, inputs_kv=x)
  with warnings.catch_warnings():
    warnings.simplefilter('error')
    layer.apply(v, x, x, mask=jnp.ones((1, 1, 3, 3), bool))
  with pytest.warns(DeprecationWarning, match='SelfAttention will be'):
    nn.SelfAttention(num_heads=2, qkv_features=4).init(KEY, x)


def test_value_with_square_trailing_axes_warns_it_may_be_a_mask():
  # The third positional argument was the mask before 0.7.4: Flax 0.12.8
  # warns whenever inputs_v's last two axes have the same length (a
  # mask's q_length x kv_length), then goes on with it as the values.
  layer = nn.MultiHeadDotProductAttention(num_heads=1, deterministic=True)
  x = jnp.ones((1, 4, 2))
  v = layer.init(KEY, x)
  mask = nn.make_causal_mask(jnp.ones((1, 4)))
  with pytest.warns(
    DeprecationWarning, match=r'shape \(1, 1, 4, 4\) to the `inputs_v`'
  ):
    with pytest.raises(errors.ScopeParamShapeError):
      layer.apply(v, x, x, mask)
  with warnings.catch_warnings():
    warnings.simplefilter('error')
    layer.apply(v, x, x, x)
    layer.apply(v, x, x, mask=mask)
  square = jnp.ones((1, 4, 4))
  v = layer.init(KEY, square)  # self-attention: no values given, no warning
  with pytest.warns(
    DeprecationWarning, match='intended to pass it to the `mask` arg'
  ):
    layer.apply(v, square, square, square)  # taken as the values
