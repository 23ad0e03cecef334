"""nnx.dot_product_attention(_weights): is_causal and grouped-query heads
(values of Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax.nnx.nn.attention import dot_product_attention_weights


def _qkv():
  k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
  q = jax.random.normal(k1, (1, 3, 4, 2))
  k = jax.random.normal(k2, (1, 3, 2, 2))
  v = jax.random.normal(k3, (1, 3, 2, 2))
  return q, k, v


def test_causal_weights_with_fewer_kv_heads():
  q, k, _ = _qkv()
  w = dot_product_attention_weights(q, k, is_causal=True)
  assert w.shape == (1, 4, 3, 3)
  np.testing.assert_allclose(
    w[0, 1],
    [
      [1.0, 0.0, 0.0],
      [0.81009656, 0.18990347, 0.0],
      [0.0932345, 0.3444918, 0.5622737],
    ],
    rtol=1e-5,
    atol=1e-6,
  )


def test_causal_output_and_head_groups():
  q, k, v = _qkv()
  y = nnx.dot_product_attention(q, k, v, is_causal=True)
  # The first query only sees the first key; query heads 0-1 share kv head
  # 0 and heads 2-3 kv head 1.
  np.testing.assert_allclose(
    y[0, 0],
    [
      [1.2956359, 1.3550105],
      [1.2956359, 1.3550105],
      [-0.40960556, -0.77188545],
      [-0.40960556, -0.77188545],
    ],
    rtol=1e-5,
  )
  np.testing.assert_allclose(y[0, 2, 3], [-0.49093601, 0.62518913], rtol=1e-5)
  np.testing.assert_allclose(
    float(nnx.dot_product_attention(q, k, v).sum()), 5.1408973, rtol=1e-5
  )


def test_causal_equals_explicit_mask():
  q, k, v = _qkv()
  mask = nnx.make_causal_mask(jnp.ones((1, 3)))
  np.testing.assert_allclose(
    nnx.dot_product_attention(q, k, v, is_causal=True),
    nnx.dot_product_attention(q, k, v, mask=mask),
    rtol=1e-6,
  )


def test_heads_must_divide():
  q, _, _ = _qkv()
  kv = jnp.ones((1, 3, 3, 2))
  with pytest.raises(ValueError):
    nnx.dot_product_attention(q, kv, kv)
