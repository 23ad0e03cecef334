"""Tests of flax.core.nn.attention: axes, masks, dropout, cache."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax.core import apply, init
from flax.core import nn as core_nn
from flax.core.nn import attention
from flax.errors import InvalidRngError

KEY = jax.random.key(0)
Q = jax.random.normal(jax.random.key(1), (2, 3, 2, 4))
KV = jax.random.normal(jax.random.key(2), (2, 5, 2, 4))


def reference(q, k, v, bias=None, keep=None):
  logits = jnp.einsum('bqhd,bkhd->bhqk', q / 2.0, k)
  if bias is not None:
    logits = logits + bias
  w = jax.nn.softmax(logits)
  if keep is not None:
    w = w * keep / 0.5
  return jnp.einsum('bhqk,bkhd->bqhd', w, v)


def run(*args, rngs=None, **kwargs):
  return apply(core_nn.dot_product_attention)({}, *args, rngs=rngs, **kwargs)


def test_dot_product_attention_values():
  y = run(Q, KV, KV, deterministic=True)
  np.testing.assert_allclose(y, reference(Q, KV, KV), rtol=1e-5, atol=1e-6)
  bias = jnp.where(jnp.arange(5) < 3, 0.0, -1e10).reshape(1, 1, 1, 5)
  y = run(Q, KV, KV, bias=bias, deterministic=True)
  np.testing.assert_allclose(
    y, reference(Q, KV, KV, bias), rtol=1e-5, atol=1e-6
  )


def test_dropout_defaults_on_and_broadcasts():
  with pytest.raises(InvalidRngError, match='dropout'):
    run(Q, KV, KV, dropout_rate=0.5)
  rng = jax.random.key(7)
  y = run(Q, KV, KV, dropout_rate=0.5, dropout_rng=rng)
  keep = jax.random.bernoulli(rng, 0.5, (1, 1, 3, 5))
  np.testing.assert_allclose(
    y, reference(Q, KV, KV, keep=keep), rtol=1e-5, atol=1e-6
  )
  y = run(Q, KV, KV, dropout_rate=0.5, dropout_rng=rng, broadcast_dropout=False)
  keep = jax.random.bernoulli(rng, 0.5, (2, 2, 3, 5))
  np.testing.assert_allclose(
    y, reference(Q, KV, KV, keep=keep), rtol=1e-5, atol=1e-6
  )
  # The 'dropout' stream is used when no rng is given.
  y = run(Q, KV, KV, dropout_rate=0.5, rngs={'dropout': rng})
  assert y.shape == Q.shape


def test_several_attention_axes():
  x = jax.random.normal(jax.random.key(4), (2, 3, 2, 2, 4))
  y = run(x, x, x, deterministic=True)
  flat = x.reshape(2, 6, 2, 4)
  ref = reference(flat, flat, flat).reshape(2, 3, 2, 2, 4)
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
  # axis=(2,): axis 1 becomes a batch axis.
  y = run(x, x, x, axis=(2,), deterministic=True)
  moved = jnp.moveaxis(x, 1, 0).reshape(6, 2, 2, 4)
  ref = jnp.moveaxis(
    reference(moved, moved, moved).reshape(3, 2, 2, 2, 4), 0, 1
  )
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match='Attention axis must be between'):
    run(x, x, x, axis=(3,), deterministic=True)


def test_shape_mismatch():
  with pytest.raises(AssertionError, match='batch size'):
    run(Q, KV[:1], KV[:1], deterministic=True)


def test_make_padding_mask():
  pad = (jnp.arange(4) < 3)[None, :, None].repeat(2, 0)
  kpad = (jnp.arange(5) < 2)[None, :, None].repeat(2, 0)
  mask = attention.make_padding_mask(pad, kpad, (2, 4, 2, 3), (2, 5, 2, 3))
  assert mask.shape == (2, 1, 4, 5) and mask.dtype == jnp.float32
  assert mask[0].astype(int).tolist() == [
    [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]]
  ]
  seg = jnp.array([[1, 1, 2, 2], [1, 2, 2, 2]])
  kseg = jnp.array([[1, 1, 2, 2, 2], [1, 1, 1, 2, 2]])
  mask = attention.make_padding_mask(
    seg, kseg, (2, 4, 2, 3), (2, 5, 2, 3), segmentation_mask=True
  )
  assert mask[1].astype(int).tolist() == [
    [[1, 1, 1, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 1, 1], [0, 0, 0, 1, 1]]
  ]


X = jax.random.normal(jax.random.key(1), (2, 4, 6))


def mha(*args, **kwargs):
  return init(core_nn.multi_head_dot_product_attention)(
    {'params': KEY}, *args, **kwargs
  )


def test_masks_become_a_bias():
  y, v = mha(X, X, 2, causal_mask=True, deterministic=True)
  seen = {}

  def spy(scope, q, k, val, **kwargs):
    seen['bias'] = kwargs['bias']
    seen['path'] = scope.path
    return core_nn.dot_product_attention(scope, q, k, val, **kwargs)

  y2, _ = mha(X, X, 2, causal_mask=True, deterministic=True, attention_fn=spy)
  np.testing.assert_allclose(y, y2)
  assert seen['path'] == ('spy_0',)
  bias = seen['bias']
  assert bias.shape == (1, 1, 4, 4)
  assert bias[0, 0, 0].tolist() == [0.0, -1e10, -1e10, -1e10]
  pad = (jnp.arange(4) < 3)[None, :, None].repeat(2, 0)
  mha(
    X,
    X,
    2,
    padding_mask=pad,
    causal_mask=True,
    attention_fn=spy,
    deterministic=True,
  )
  assert seen['bias'].shape == (2, 1, 4, 4)
  assert (seen['bias'][:, :, 3] == -1e10).all()


def test_padding_on_every_key_gives_unnormalized_weights():
  # A query row with every key masked keeps a weight of 1 per key (logits
  # minus their logsumexp), as Flax 0.12.8 computes it.
  pad = jnp.ones((2, 5, 1), bool)
  kpad = jnp.zeros((2, 5, 1), bool)
  q = jax.random.normal(jax.random.key(3), (2, 5, 2, 4))
  y = run(
    q,
    q,
    q,
    deterministic=True,
    bias=jnp.where(
      attention.make_padding_mask(pad, kpad, q.shape, q.shape) > 0, 0.0, -1e10
    ),
  )
  np.testing.assert_allclose(
    y, jnp.broadcast_to(q.sum(1, keepdims=True), q.shape), rtol=1e-5
  )


def test_cache_decoding_matches_causal_attention():
  full, v = mha(X, X, 2, causal_mask=True, deterministic=True)
  params = v['params']
  _, fresh = init(core_nn.multi_head_dot_product_attention, mutable=True)(
    {'params': KEY}, X, X, 2, cache=True, causal_mask=True
  )
  entry = fresh['cache']['entry']((2, 4))
  assert isinstance(entry, attention.CacheEntry)
  assert entry.key.shape == (2, 4, 2, 3) and entry.i.dtype == jnp.uint32
  with pytest.raises(ValueError, match='cache shape'):
    fresh['cache']['entry']((2,))
  step = apply(core_nn.multi_head_dot_product_attention, mutable='cache')
  state = {'params': params, 'cache': {'entry': entry}}
  outs = []
  for t in range(4):
    y, new = step(
      state,
      X[:, t : t + 1],
      X[:, t : t + 1],
      2,
      cache=True,
      causal_mask=True,
      deterministic=True,
    )
    state = {'params': params, 'cache': new['cache']}
    outs.append(y)
  np.testing.assert_allclose(
    jnp.concatenate(outs, 1), full, rtol=1e-5, atol=1e-6
  )
  assert int(state['cache']['entry'].i) == 4
  with pytest.raises(ValueError, match='Invalid shape provided'):
    step(state, X[:, :2], X[:, :2], 2, cache=True, causal_mask=True)
  with pytest.raises(ValueError, match='Cache is not initialized'):
    step(
      {'params': params, 'cache': {'entry': 3}},
      X[:, :1],
      X[:, :1],
      2,
      cache=True,
      causal_mask=True,
    )
  with pytest.raises(AssertionError, match='causal'):
    mha(X, X, 2, cache=True)
