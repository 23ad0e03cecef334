"""PRNG derivation of flax.core scopes on its fast paths.

Keys are folded through one compiled call, suffix hashes are cached, and
initializers that never read their key (``zeros``/``ones``) get no derived
key; none of this may change which keys users see.
"""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import errors
from flax.core import Scope, init
from flax.core.scope import LazyRng

zeros = jax.nn.initializers.zeros
ones = jax.nn.initializers.ones


def reference_key(root, *items):
  """The documented derivation, written out with hashlib."""
  digest = hashlib.sha1()
  for item in items:
    if isinstance(item, str):
      digest.update(item.encode())
    else:
      digest.update(item.to_bytes((item.bit_length() + 7) // 8, 'big'))
  value = int.from_bytes(digest.digest()[:4], 'big')
  return jax.random.fold_in(root, np.uint32(value))


def keys_equal(a, b):
  return np.array_equal(jax.random.key_data(a), jax.random.key_data(b))


def test_key_free_initializers_still_use_up_a_key():
  key = jax.random.PRNGKey(7)
  scope = Scope({}, rngs={'params': key}, mutable=True).push('layer')
  np.testing.assert_array_equal(scope.param('b', zeros, (3,)), np.zeros(3))
  np.testing.assert_array_equal(scope.param('s', ones, (2,)), np.ones(2))
  # Two keys were counted, so the next one is the third.
  assert keys_equal(scope.make_rng('params'), reference_key(key, 'layer', 3))


def test_key_free_initializer_needs_a_params_stream():
  scope = Scope({}, rngs={'dropout': jax.random.PRNGKey(0)}, mutable=True)
  with pytest.raises(errors.InvalidRngError, match='needs PRNG for "params"'):
    scope.param('b', zeros, (3,))


def test_params_after_a_zeros_bias_match_the_reference():
  key = jax.random.PRNGKey(1)
  normal = jax.nn.initializers.normal()

  def f(scope):
    scope.param('bias', zeros, (2,))
    return scope.param('kernel', normal, (2, 2))

  _, variables = init(f)(key)
  expected = normal(reference_key(key, 2), (2, 2))
  np.testing.assert_array_equal(variables['params']['kernel'], expected)


def test_cached_suffix_hash_keeps_rejecting_non_int_items():
  key = jax.random.PRNGKey(0)
  first = LazyRng.create(key, 'a', 1).as_jax_rng()
  assert keys_equal(first, reference_key(key, 'a', 1))
  # ``True == 1`` and ``1.0 == 1``: the cached hash of ``1`` is not reused.
  for bad in (True, 1.0):
    with pytest.raises(ValueError, match='Expected int or string'):
      LazyRng.create(key, 'a', bad).as_jax_rng()
  with pytest.raises(ValueError, match='Expected int or string'):
    LazyRng.create(key, 'a', [1]).as_jax_rng()
  # numpy integers hash like Python ints.
  again = LazyRng.create(key, 'a', np.int32(1)).as_jax_rng()
  assert keys_equal(again, first)


def test_raw_keys_follow_the_default_prng_impl():
  old = jax.config.jax_default_prng_impl
  try:
    for impl in ('rbg', 'unsafe_rbg', 'rbg'):
      jax.config.update('jax_default_prng_impl', impl)
      key = jax.random.PRNGKey(3)
      out = LazyRng.create(key, 'm', 2).as_jax_rng()
      assert out.shape == (4,)
      np.testing.assert_array_equal(out, reference_key(key, 'm', 2))
  finally:
    jax.config.update('jax_default_prng_impl', old)


def test_make_rng_is_the_same_under_jit_eval_shape_and_vmap():
  key = jax.random.key(11)

  def draw(k):
    return Scope({}, rngs={'params': k}).push('x').make_rng('params')

  expected = reference_key(key, 'x', 1)
  assert keys_equal(draw(key), expected)
  assert keys_equal(jax.jit(draw)(key), expected)
  assert jax.eval_shape(draw, key).dtype == key.dtype
  with jax.disable_jit():
    assert keys_equal(draw(key), expected)
  batch = jax.random.split(key, 3)
  out = jax.vmap(draw)(batch)
  for i in range(3):
    assert keys_equal(out[i], reference_key(batch[i], 'x', 1))


def test_typed_and_raw_keys_give_the_same_bits():
  raw = jax.random.PRNGKey(5)
  typed = jax.random.wrap_key_data(raw)
  a = LazyRng.create(raw, 'Dense_0', 1).as_jax_rng()
  b = LazyRng.create(typed, 'Dense_0', 1).as_jax_rng()
  np.testing.assert_array_equal(a, jax.random.key_data(b))
  assert jnp.issubdtype(b.dtype, jax.dtypes.prng_key)
