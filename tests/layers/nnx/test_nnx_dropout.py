"""Dropout."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx


def test_dropout_defaults_and_eval():
  layer = nnx.Dropout(0.5)
  assert layer.deterministic is False
  assert layer.rate == 0.5
  layer.eval()
  x = jnp.arange(6.0)
  np.testing.assert_array_equal(layer(x), x)
  layer.train()
  assert layer.deterministic is False


def test_dropout_mask_and_scale():
  layer = nnx.Dropout(0.25, rngs=nnx.Rngs(dropout=0))
  x = jnp.ones((200, 50))
  y = np.asarray(layer(x))
  values = set(np.unique(y).tolist())
  assert values <= {0.0, float(np.float32(1) / np.float32(0.75))}
  kept = (y != 0).mean()
  assert 0.7 < kept < 0.8
  # The stream advances: a second call draws another mask.
  assert not np.array_equal(np.asarray(layer(x)), y)


def test_dropout_matches_bernoulli_with_given_key():
  layer = nnx.Dropout(0.5)
  key = jax.random.key(3)
  x = jnp.arange(1.0, 11.0)
  y = layer(x, rngs=key)
  mask = jax.random.bernoulli(key, 0.5, (10,))
  np.testing.assert_allclose(y, np.where(mask, x / 0.5, 0.0))


def test_dropout_call_rngs_and_missing_rngs():
  layer = nnx.Dropout(0.5)
  with pytest.raises(ValueError, match='no `rngs` argument'):
    layer(jnp.ones(3))
  y = layer(jnp.ones(3), rngs=nnx.Rngs(0))
  assert y.shape == (3,)
  np.testing.assert_array_equal(
    layer(jnp.ones(3), deterministic=True), np.ones(3)
  )


def test_dropout_missing_deterministic():
  layer = nnx.Dropout(0.5, deterministic=None)
  with pytest.raises(ValueError, match='deterministic'):
    layer(jnp.ones(3))


def test_dropout_broadcast_dims_and_extremes():
  layer = nnx.Dropout(0.5, broadcast_dims=(0,), rngs=nnx.Rngs(0))
  y = np.asarray(layer(jnp.ones((6, 40))))
  assert (y == y[0]).all()
  np.testing.assert_array_equal(nnx.Dropout(1.0)(jnp.ones(3)), np.zeros(3))
  np.testing.assert_array_equal(nnx.Dropout(0.0)(jnp.ones(3)), np.ones(3))


def test_dropout_rng_collection():
  layer = nnx.Dropout(0.5, rng_collection='noise', rngs=nnx.Rngs(noise=1))
  assert layer(jnp.ones(8)).shape == (8,)


def test_dropout_in_jit():
  model = nnx.Dropout(0.5, rngs=nnx.Rngs(0))
  f = nnx.jit(lambda m, x: m(x))
  a = np.asarray(f(model, jnp.ones(64)))
  b = np.asarray(f(model, jnp.ones(64)))
  assert not np.array_equal(a, b)
