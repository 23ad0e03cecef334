"""Without dropout and without a module to sow into, nnx.dot_product_attention
is JAX's fused attention (batch dimensions folded into one), bit for bit,
complex inputs included (as Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx


def _qkv(shape, dtype=jnp.float32):
  keys = jax.random.split(jax.random.key(1), 3)
  return [jax.random.normal(k, shape).astype(dtype) for k in keys]


def test_bitwise_equal_to_jax_for_bfloat16():
  q, k, v = _qkv((2, 5, 4, 8), jnp.bfloat16)
  np.testing.assert_array_equal(
    nnx.dot_product_attention(q, k, v), jax.nn.dot_product_attention(q, k, v)
  )
  np.testing.assert_array_equal(
    nnx.dot_product_attention(q, k, v, is_causal=True),
    jax.nn.dot_product_attention(q, k, v, is_causal=True),
  )


def test_extra_batch_dimensions_and_grouped_heads():
  q, k, v = _qkv((2, 3, 5, 4, 8), jnp.bfloat16)
  k, v = k[..., :2, :], v[..., :2, :]
  out = nnx.dot_product_attention(q, k, v)
  assert out.shape == (2, 3, 5, 4, 8)

  def fold(x):
    return x.reshape((6,) + x.shape[2:])

  expected = jax.nn.dot_product_attention(fold(q), fold(k), fold(v))
  np.testing.assert_array_equal(out, expected.reshape(out.shape))


def test_complex_inputs():
  keys = jax.random.split(jax.random.key(0), 3)

  def c(key):
    a, b = jax.random.normal(key, (2, 1, 3, 2, 4))
    return (a + 1j * b).astype(jnp.complex64)

  q, k, v = map(c, keys)
  # JAX's fused attention warns that it casts complex values to real
  with pytest.warns(DeprecationWarning, match='complex to real'):
    out = nnx.dot_product_attention(q, k, v)
  assert out.dtype == jnp.complex64
  np.testing.assert_allclose(complex(out.sum()), -0.884 + 9.827j, atol=1e-3)
  # with dropout configured, the weights are computed step by step
  out = nnx.dot_product_attention(q, k, v, dropout_rate=0.5, deterministic=True)
  np.testing.assert_allclose(complex(out.sum()), -6.499 + 10.201j, atol=1e-3)


def test_non_boolean_masks_count_nonzero_entries():
  q, k, v = _qkv((2, 5, 4, 8), jnp.bfloat16)
  mask = jax.random.bernoulli(jax.random.key(3), 0.7, (2, 4, 5, 5))
  expected = jax.nn.dot_product_attention(q, k, v, mask=mask)
  for m in (mask.astype(jnp.float32) * 0.5, mask.astype(jnp.int32)):
    np.testing.assert_array_equal(
      nnx.dot_product_attention(q, k, v, mask=m), expected
    )
