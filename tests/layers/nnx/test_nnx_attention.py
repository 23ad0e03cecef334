"""MultiHeadAttention and the attention functions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_layer_helpers import assert_close
from nnx_layer_helpers import shapes


def _ref_attention(q, k, v, mask=None):
  q = np.asarray(q, np.float64) / np.sqrt(q.shape[-1])
  logits = np.einsum('...qhd,...khd->...hqk', q, np.asarray(k, np.float64))
  if mask is not None:
    logits = np.where(mask, logits, -1e30)
  w = np.exp(logits - logits.max(-1, keepdims=True))
  w = w / w.sum(-1, keepdims=True)
  return np.einsum('...hqk,...khd->...qhd', w, np.asarray(v, np.float64))


def test_dot_product_attention():
  kq, kk, kv = jax.random.split(jax.random.key(0), 3)
  q = jax.random.normal(kq, (2, 3, 4, 5))
  k = jax.random.normal(kk, (2, 6, 4, 5))
  v = jax.random.normal(kv, (2, 6, 4, 5))
  attention = jax.jit(nnx.dot_product_attention)
  assert_close(attention(q, k, v), _ref_attention(q, k, v), atol=1e-5)
  # off the fused path (dropout configured), values may have another depth
  v7 = jax.random.normal(kv, (2, 6, 4, 7))
  out = nnx.dot_product_attention(
    q, k, v7, dropout_rate=0.5, deterministic=True
  )
  assert_close(out, _ref_attention(q, k, v7), atol=1e-5)
  mask = np.tril(np.ones((3, 6), bool))[None, None]
  assert_close(
    attention(q, k, v, mask=mask),
    _ref_attention(q, k, v, mask),
    atol=1e-5,
  )
  assert nnx.dot_product_attention_weights(q, k).shape == (2, 4, 3, 6)


def test_masks():
  m = nnx.make_causal_mask(jnp.ones((1, 3)))
  np.testing.assert_array_equal(m[0, 0], np.tril(np.ones((3, 3))))
  a = nnx.make_attention_mask(jnp.array([[1, 1, 0]]), jnp.array([[1, 0]]))
  assert a.shape == (1, 1, 3, 2)
  c = nnx.combine_masks(m, None, m)
  np.testing.assert_array_equal(c, m)
  assert nnx.combine_masks(None, None) is None


def test_mha_state_tree():
  layer = nnx.MultiHeadAttention(
    num_heads=2,
    in_features=6,
    qkv_features=8,
    out_features=5,
    decode=False,
    rngs=nnx.Rngs(0),
  )
  assert shapes(layer) == {
    'key/bias': ((2, 4), 'float32'),
    'key/kernel': ((6, 2, 4), 'float32'),
    'out/bias': ((5,), 'float32'),
    'out/kernel': ((2, 4, 5), 'float32'),
    'query/bias': ((2, 4), 'float32'),
    'query/kernel': ((6, 2, 4), 'float32'),
    'value/bias': ((2, 4), 'float32'),
    'value/kernel': ((6, 2, 4), 'float32'),
  }
  assert layer.head_dim == 4


def test_mha_numerics():
  layer = nnx.MultiHeadAttention(
    num_heads=2,
    in_features=6,
    decode=False,
    bias_init=nnx.initializers.normal(1.0),
    rngs=nnx.Rngs(0),
  )
  x = jax.random.normal(jax.random.key(1), (3, 5, 6))
  y = layer(x)
  assert y.shape == (3, 5, 6)

  def proj(m, x):
    return np.einsum('...i,ihd->...hd', x, m.kernel[...]) + np.asarray(
      m.bias[...]
    )

  q, k, v = (proj(m, x) for m in (layer.query, layer.key, layer.value))
  h = _ref_attention(q, k, v)
  out = np.einsum('...hd,hdo->...o', h, layer.out.kernel[...])
  assert_close(y, out + np.asarray(layer.out.bias[...]), atol=1e-4)
  # Cross-attention with separate key/value inputs.
  kv = jax.random.normal(jax.random.key(2), (3, 7, 6))
  assert layer(x, kv).shape == (3, 5, 6)
  assert layer(x, kv, kv * 2).shape == (3, 5, 6)


def test_mha_errors():
  with pytest.raises(ValueError, match='must be divisible'):
    nnx.MultiHeadAttention(num_heads=3, in_features=4, rngs=nnx.Rngs(0))
  layer = nnx.MultiHeadAttention(
    num_heads=2, in_features=4, decode=False, rngs=nnx.Rngs(0)
  )
  with pytest.raises(ValueError, match='Incompatible input dimension'):
    layer(jnp.ones((1, 2, 3)))
  with pytest.raises(ValueError, match='`inputs_k` cannot be None'):
    layer(jnp.ones((1, 2, 4)), None, jnp.ones((1, 2, 4)))
  with pytest.raises(ValueError, match='decode'):
    nnx.MultiHeadAttention(num_heads=2, in_features=4, rngs=nnx.Rngs(0))(
      jnp.ones((1, 2, 4))
    )
  dec = nnx.MultiHeadAttention(
    num_heads=2, in_features=4, decode=True, rngs=nnx.Rngs(0)
  )
  with pytest.raises(ValueError, match='call ``init_cache`` first'):
    dec(jnp.ones((1, 1, 4)))


def test_mha_cache_shapes_from_docs():
  layer = nnx.MultiHeadAttention(
    num_heads=2,
    in_features=3,
    qkv_features=6,
    out_features=6,
    decode=True,
    rngs=nnx.Rngs(0),
  )
  layer.init_cache((1, 3))
  assert shapes(layer, nnx.Cache) == {
    'cache_index': ((), 'int32'),
    'cached_key': ((1, 2, 3), 'float32'),
    'cached_value': ((1, 2, 3), 'float32'),
  }


def test_mha_decode_matches_causal_attention():
  layer = nnx.MultiHeadAttention(
    num_heads=2, in_features=4, decode=False, rngs=nnx.Rngs(0)
  )
  x = jax.random.normal(jax.random.key(0), (2, 5, 4))
  full = layer(x, mask=nnx.make_causal_mask(jnp.ones((2, 5))))
  layer.init_cache(x.shape)
  steps = [layer(x[:, i : i + 1], decode=True) for i in range(5)]
  assert_close(jnp.concatenate(steps, axis=1), full, atol=1e-5)
  assert int(layer.cache_index[...]) == 5
  with pytest.raises(ValueError, match='Autoregressive cache shape error'):
    layer(x[:, :2], decode=True)


def test_mha_dropout_and_sow():
  layer = nnx.MultiHeadAttention(
    num_heads=2, in_features=4, decode=False, dropout_rate=0.5, rngs=nnx.Rngs(0)
  )
  x = jnp.ones((1, 3, 4))
  with pytest.raises(ValueError, match='deterministic'):
    layer(x)
  a = layer(x, deterministic=False)
  b = layer(x, deterministic=False)
  assert not np.allclose(a, b)
  layer.eval()
  np.testing.assert_allclose(layer(x), layer(x))
  with pytest.warns(DeprecationWarning, match='Module.sow'):
    layer(x, sow_weights=True)  # outside nnx.capture: deprecated
  (weights,) = layer.attention_weights.get_value()
  assert weights.shape == (1, 2, 3, 3)


def test_mha_normalize_qk():
  layer = nnx.MultiHeadAttention(
    num_heads=2,
    in_features=4,
    decode=False,
    normalize_qk=True,
    rngs=nnx.Rngs(0),
  )
  s = shapes(layer)
  assert s['query_ln/scale'] == ((2,), 'float32')
  assert 'query_ln/bias' not in s
  assert layer(jnp.ones((1, 3, 4))).shape == (1, 3, 4)
