"""Tests of flax.layers initializers, activations and dtype rules."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax.layers import activations, dtypes, initializers


def test_import_is_light():
  code = (
    'import sys, importlib, flax.layers\n'
    'for m in flax.layers._SUBMODULES:\n'
    '  importlib.import_module("flax.layers." + m)\n'
    'bad = [m for m in sys.modules if m.startswith(("flax.linen", "flax.nnx"))]\n'
    'assert not bad, bad\n'
  )
  subprocess.run([sys.executable, '-c', code], check=True)


@pytest.mark.parametrize(
  'name',
  [
    'constant',
    'delta_orthogonal',
    'glorot_normal',
    'glorot_uniform',
    'he_normal',
    'he_uniform',
    'kaiming_normal',
    'kaiming_uniform',
    'lecun_normal',
    'lecun_uniform',
    'normal',
    'ones',
    'orthogonal',
    'truncated_normal',
    'uniform',
    'variance_scaling',
    'xavier_normal',
    'xavier_uniform',
    'zeros',
    'Initializer',
  ],
)
def test_initializers_are_jax(name):
  assert getattr(initializers, name) is getattr(jax.nn.initializers, name)


def test_zeros_ones_init():
  key = jax.random.key(42)
  z = initializers.zeros_init()(key, (2, 3), jnp.float32)
  o = initializers.ones_init()(key, (3, 2), jnp.bfloat16)
  np.testing.assert_array_equal(z, np.zeros((2, 3)))
  np.testing.assert_array_equal(o, np.ones((3, 2)))
  assert z.dtype == jnp.float32 and o.dtype == jnp.bfloat16
  assert initializers.zeros_init().__name__ == 'zeros'


def test_default_inits():
  key = jax.random.key(0)
  k = initializers.default_kernel_init(key, (64, 32), jnp.float32)
  expected = jax.nn.initializers.variance_scaling(
    1.0, 'fan_in', 'truncated_normal'
  )(key, (64, 32), jnp.float32)
  np.testing.assert_array_equal(k, expected)
  assert initializers.default_kernel_init.__name__ == 'init'
  e = initializers.default_embed_init(key, (100, 8), jnp.float32)
  # fan_in is the embedding axis (out_axis=0), so std is 1/sqrt(8).
  assert abs(float(e.std()) - 1 / np.sqrt(8)) < 0.05


def test_activations():
  x = jnp.linspace(-3.0, 3.0, 13)
  assert activations.relu is jax.nn.relu
  assert activations.tanh is jnp.tanh
  assert activations.normalize is jax.nn.standardize
  np.testing.assert_allclose(activations.relu6(x + 4), np.clip(x + 4, 0, 6))
  np.testing.assert_allclose(
    activations.soft_sign(x), np.asarray(x) / (np.abs(x) + 1), rtol=1e-6
  )
  np.testing.assert_allclose(
    activations.selu(jnp.array(-1.0)),
    1.0507009873554805 * 1.6732632423543772 * (np.exp(-1.0) - 1),
    rtol=1e-6,
  )
  np.testing.assert_array_equal(
    activations.one_hot(jnp.array([0, 1, 2]), 3), np.eye(3)
  )
  np.testing.assert_array_equal(
    activations.one_hot(jnp.array([-1, 3]), 3), np.zeros((2, 3))
  )
  for name in activations.__all__:
    assert callable(getattr(activations, name)), name


def test_canonicalize_dtype():
  f32, bf16 = jnp.ones(2), jnp.ones(2, jnp.bfloat16)
  assert dtypes.canonicalize_dtype(bf16, f32) == jnp.float32
  assert dtypes.canonicalize_dtype(bf16, None) == jnp.bfloat16
  # NumPy float64 is canonicalized like JAX does (float32 without x64).
  assert dtypes.canonicalize_dtype(np.ones(2)) == jnp.float32
  assert dtypes.canonicalize_dtype(jnp.ones(2, jnp.int32)) == jnp.float32
  assert (
    dtypes.canonicalize_dtype(jnp.ones(2, jnp.int32), inexact=False)
    == jnp.int32
  )
  assert dtypes.canonicalize_dtype(f32, dtype=jnp.bfloat16) == jnp.bfloat16
  with pytest.raises(ValueError, match='Dtype must be inexact'):
    dtypes.canonicalize_dtype(f32, dtype=jnp.int32)


def test_promote_dtype():
  x, w, b = dtypes.promote_dtype(jnp.ones(2, jnp.bfloat16), jnp.ones(2), None)
  assert x.dtype == w.dtype == jnp.float32 and b is None
  x, w = dtypes.promote_dtype(jnp.ones(2), jnp.ones(2), dtype=jnp.bfloat16)
  assert x.dtype == w.dtype == jnp.bfloat16
  (e,) = dtypes.promote_dtype(jnp.arange(3), inexact=False)
  assert e.dtype == jnp.int32
  out = dtypes.promote_dtypes((jnp.ones(2, jnp.int8), jnp.ones(2)))
  assert isinstance(out, tuple) and out[0].dtype == jnp.float32
  c = dtypes.promote_dtype(jnp.ones(2, jnp.complex64), jnp.ones(2))
  assert c[1].dtype == jnp.complex64
