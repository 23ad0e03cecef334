"""Tests of flax.layers normalization, attention, pooling, recurrent and
dropout math against plain NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax.layers import attention, normalization, pooling, recurrent
from flax.layers import stochastic


def _rand(shape, seed=0):
  return np.asarray(jax.random.normal(jax.random.key(seed), shape))


def test_compute_stats():
  x = _rand((4, 5, 3))
  mean, var = normalization.compute_stats(jnp.asarray(x), (0, 1))
  np.testing.assert_allclose(mean, x.mean((0, 1)), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(var, x.var((0, 1)), rtol=1e-4)
  mean, var = normalization.compute_stats(
    jnp.asarray(x), -1, use_fast_variance=False
  )
  np.testing.assert_allclose(var, x.var(-1), rtol=1e-4)
  mean, var = normalization.compute_stats(jnp.asarray(x), -1, use_mean=False)
  np.testing.assert_array_equal(mean, 0)
  np.testing.assert_allclose(var, (x**2).mean(-1), rtol=1e-5)
  mean, var = normalization.compute_stats(jnp.asarray(x, jnp.bfloat16), (0,))
  assert mean.dtype == var.dtype == jnp.float32
  mask = np.ones((4, 5, 3), bool)
  mask[0] = False
  mean, _ = normalization.compute_stats(jnp.asarray(x), (0,), mask=mask)
  np.testing.assert_allclose(mean, x[1:].mean(0), rtol=1e-5, atol=1e-6)


def test_compute_stats_complex_and_pmean():
  x = jnp.array([[1 + 1j, 3 - 1j]])
  _, var = normalization.compute_stats(x, (1,))
  assert var.dtype == jnp.float32
  np.testing.assert_allclose(var, [2.0], rtol=1e-6)
  xs = jnp.asarray(_rand((2, 3, 4)))
  mean, var = jax.vmap(
    lambda v: normalization.compute_stats(v, (0,), axis_name='b'),
    axis_name='b',
  )(xs)
  np.testing.assert_allclose(
    mean[0], np.asarray(xs).reshape(6, 4).mean(0), rtol=1e-5, atol=1e-6
  )
  np.testing.assert_allclose(
    var[1], np.asarray(xs).reshape(6, 4).var(0), rtol=1e-4
  )


def test_normalize():
  x = _rand((3, 4))
  scale, bias = _rand((4,), 1), _rand((4,), 2)
  mean, var = x.mean(-1), x.var(-1)
  y = normalization.normalize(
    jnp.asarray(x), mean, var, (1,), (1,), scale, bias, epsilon=1e-6
  )
  ref = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-6) * scale + bias
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
  y = normalization.normalize(
    jnp.asarray(x, jnp.bfloat16), mean, var, (1,), (1,), epsilon=1e-6
  )
  assert y.dtype == jnp.bfloat16  # the statistics do not count
  y = normalization.normalize(
    jnp.asarray(x, jnp.bfloat16), mean, var, (1,), (1,), scale, epsilon=1e-6
  )
  assert y.dtype == jnp.float32  # float32 scale promotes
  y = normalization.normalize(
    jnp.asarray(x), mean, var, (1,), (1,), dtype=jnp.bfloat16
  )
  assert y.dtype == jnp.bfloat16


def test_group_norm_helpers():
  assert normalization.group_norm_groups(8, 4, None) == 4
  assert normalization.group_norm_groups(8, None, 2) == 4
  with pytest.raises(ValueError, match='Either `num_groups` or'):
    normalization.group_norm_groups(8, 4, 2)
  with pytest.raises(ValueError, match=r'Number of groups \(3\) does not'):
    normalization.group_norm_groups(8, 3, None)
  with pytest.raises(ValueError, match=r'is not multiple of the group size'):
    normalization.group_norm_groups(8, None, 3)
  x = _rand((2, 5, 6))
  mean, var, red = normalization.group_stats(jnp.asarray(x), 3)
  assert red == (1,) and mean.shape == (2, 6)
  g = x.reshape(2, 5, 3, 2)
  np.testing.assert_allclose(
    mean, np.repeat(g.mean((1, 3)), 2, -1), rtol=1e-5, atol=1e-6
  )
  np.testing.assert_allclose(var, np.repeat(g.var((1, 3)), 2, -1), rtol=1e-4)
  with pytest.raises(ValueError, match='must include the final dimension'):
    normalization.group_stats(jnp.asarray(x), 3, reduction_axes=(1,))


def _ref_attention(q, k, v, mask=None, bias=None):
  logits = np.einsum('...qhd,...khd->...hqk', q / np.sqrt(q.shape[-1]), k)
  if bias is not None:
    logits = logits + bias
  if mask is not None:
    logits = np.where(mask, logits, np.finfo(np.float32).min)
  w = np.exp(logits - logits.max(-1, keepdims=True))
  w = w / w.sum(-1, keepdims=True)
  return w, np.einsum('...hqk,...khd->...qhd', w, v)


def test_dot_product_attention():
  q, k, v = _rand((2, 3, 4, 5)), _rand((2, 6, 4, 5), 1), _rand((2, 6, 4, 7), 2)
  mask = np.tril(np.ones((3, 6), bool))[None, None]
  bias = _rand((1, 4, 3, 6), 3)
  w_ref, out_ref = _ref_attention(q, k, v, mask, bias)
  w = attention.dot_product_attention_weights(q, k, bias, mask)
  out = attention.dot_product_attention(q, k, v, bias, mask)
  np.testing.assert_allclose(w, w_ref, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(out, out_ref, rtol=1e-5, atol=1e-5)
  assert out.shape == (2, 3, 4, 7)
  # No batch axes at all.
  out = attention.dot_product_attention(q[0], k[0], v[0])
  np.testing.assert_allclose(
    out, _ref_attention(q[0], k[0], v[0])[1], rtol=1e-5, atol=1e-5
  )
  out = attention.dot_product_attention(q, k, v, dtype=jnp.bfloat16)
  assert out.dtype == jnp.bfloat16


def test_attention_dropout_and_sow():
  q = jnp.asarray(_rand((2, 3, 4, 5)))
  w0 = attention.dot_product_attention_weights(q, q)
  rng = jax.random.key(0)
  w = attention.dot_product_attention_weights(
    q, q, dropout_rng=rng, dropout_rate=0.5
  )
  keep = jax.random.bernoulli(rng, 0.5, (1, 1, 3, 3))
  np.testing.assert_allclose(w, w0 * keep / 0.5, rtol=1e-6)
  w = attention.dot_product_attention_weights(
    q, q, dropout_rng=rng, dropout_rate=0.5, deterministic=True
  )
  np.testing.assert_allclose(w, w0)
  w = attention.dot_product_attention_weights(
    q, q, dropout_rng=rng, dropout_rate=0.5, broadcast_dropout=False
  )
  keep = jax.random.bernoulli(rng, 0.5, (2, 4, 3, 3))
  np.testing.assert_allclose(w, w0 * keep / 0.5, rtol=1e-6)

  class Recorder:
    def __init__(self):
      self.calls = []

    def sow(self, col, name, value):
      self.calls.append((col, name, value.shape))

  rec = Recorder()
  attention.dot_product_attention(q, q, q, module=rec)
  assert rec.calls == [('intermediates', 'attention_weights', (2, 4, 3, 3))]


def test_attention_asserts():
  q = jnp.ones((2, 3, 4, 5))
  with pytest.raises(AssertionError, match='num_heads must match'):
    attention.dot_product_attention(q, jnp.ones((2, 3, 2, 5)), q)
  with pytest.raises(AssertionError, match='k, v lengths must match'):
    attention.dot_product_attention(q, q, jnp.ones((2, 4, 4, 5)))


def test_masks():
  qi = jnp.array([[1, 1, 0]])
  ki = jnp.array([[1, 0]])
  m = attention.make_attention_mask(qi, ki)
  assert m.shape == (1, 1, 3, 2) and m.dtype == jnp.float32
  np.testing.assert_array_equal(m[0, 0], [[1, 0], [1, 0], [0, 0]])
  m = attention.make_attention_mask(qi, ki, extra_batch_dims=2)
  assert m.shape == (1, 1, 1, 1, 3, 2)
  c = attention.make_causal_mask(jnp.ones((2, 4)), dtype=jnp.bool_)
  assert c.shape == (2, 1, 4, 4) and c.dtype == jnp.bool_
  np.testing.assert_array_equal(c[1, 0], np.tril(np.ones((4, 4), bool)))
  a = np.array([[1, 1], [0, 1]], bool)
  b = np.array([[1, 0], [1, 1]], bool)
  np.testing.assert_array_equal(
    attention.combine_masks(a, None, b), (a & b).astype(np.float32)
  )
  assert attention.combine_masks(None, None) is None
  with pytest.raises(AssertionError, match='same rank'):
    attention.combine_masks(a, a[None])


def test_pooling():
  x = _rand((2, 4, 6, 3))
  y = pooling.avg_pool(jnp.asarray(x), (2, 2), strides=(2, 2))
  ref = x.reshape(2, 2, 2, 3, 2, 3).mean((2, 4))
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
  y = pooling.max_pool(jnp.asarray(x), (2, 2), strides=(2, 2))
  np.testing.assert_allclose(y, x.reshape(2, 2, 2, 3, 2, 3).max((2, 4)))
  y = pooling.min_pool(jnp.asarray(x), (2, 2), strides=(2, 2))
  np.testing.assert_allclose(y, x.reshape(2, 2, 2, 3, 2, 3).min((2, 4)))
  # No batch axis, and several batch axes.
  assert pooling.max_pool(jnp.asarray(x[0]), (2, 2)).shape == (3, 5, 3)
  assert pooling.avg_pool(jnp.asarray(x[None]), (2, 2)).shape == (1, 2, 3, 5, 3)
  y = pooling.max_pool(jnp.arange(6).reshape(1, 6, 1), (2,), (2,))
  np.testing.assert_array_equal(y[0, :, 0], [1, 3, 5])


def test_avg_pool_padding():
  x = jnp.ones((1, 3, 3, 1))
  pad = ((1, 1), (1, 1))
  y = pooling.avg_pool(x, (3, 3), padding=pad)
  assert float(y[0, 0, 0, 0]) == pytest.approx(4 / 9)
  y = pooling.avg_pool(x, (3, 3), padding=pad, count_include_pad=False)
  np.testing.assert_allclose(y, np.ones((1, 3, 3, 1)), rtol=1e-6)
  y = pooling.avg_pool(x, (3, 3), padding='SAME', count_include_pad=False)
  np.testing.assert_allclose(y, np.ones((1, 3, 3, 1)), rtol=1e-6)
  y = pooling.pool(x, 0.0, jax.lax.add, (3, 3), None, [[1, 1], [1, 1]])
  assert float(y[0, 1, 1, 0]) == 9
  with pytest.raises(AssertionError):
    pooling.pool(x, 0.0, jax.lax.add, (3, 3), (1,), 'VALID')


def test_flip_sequences():
  x = jnp.array([[1, 2, 3, 0, 0], [1, 2, 3, 4, 5]])
  y = recurrent.flip_sequences(x, jnp.array([3, 5]), 1, False)
  np.testing.assert_array_equal(y, [[3, 2, 1, 0, 0], [5, 4, 3, 2, 1]])
  y = recurrent.flip_sequences(x.T[..., None], jnp.array([3, 5]), 1, True)
  np.testing.assert_array_equal(y[..., 0].T, [[3, 2, 1, 0, 0], [5, 4, 3, 2, 1]])
  np.testing.assert_array_equal(
    recurrent.flip_sequences(x, None, 1, False), x[:, ::-1]
  )


def test_select_last_carry_and_concat_dense():
  carries = jnp.arange(12.0).reshape(4, 3)  # (time, batch)
  out = recurrent.select_last_carry(carries, jnp.array([1, 4, 2]))
  np.testing.assert_array_equal(out, [0.0, 10.0, 5.0])
  x = jnp.asarray(_rand((2, 3)))
  ks = [jnp.asarray(_rand((3, n), i)) for i, n in enumerate((2, 4))]
  bs = [jnp.ones(2), jnp.zeros(4)]
  a, b = recurrent.concat_dense(x, ks, bs)
  np.testing.assert_allclose(a, x @ ks[0] + 1, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(b, x @ ks[1], rtol=1e-5, atol=1e-6)


def test_dropout():
  x = jnp.ones((100, 10))
  rng = jax.random.key(1)
  y = stochastic.dropout(x, 0.3, rng)
  keep = jax.random.bernoulli(rng, 0.7, (100, 10))
  np.testing.assert_allclose(y, np.where(keep, 1 / 0.7, 0), rtol=1e-6)
  y = stochastic.dropout(x, 0.3, rng, broadcast_dims=(0,))
  assert (y == y[:1]).all()
  assert stochastic.dropout(x, 0.0, None) is x
  np.testing.assert_array_equal(stochastic.dropout(x, 1.0, None), 0)
  assert stochastic.dropout_mask_shape((2, 3, 4), (0, 2)) == [1, 3, 1]
