"""Linen Dropout, PReLU, pooling and the flax.linen exports."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import errors
from flax import linen as nn
from flax.plugins import first_party_exports

KEY = jax.random.key(0)


def test_dropout():
  x = jnp.ones((10, 20))
  layer = nn.Dropout(0.5)
  y = layer.apply({}, x, deterministic=False, rngs={'dropout': KEY})
  assert set(np.unique(np.asarray(y)).tolist()) <= {0.0, 2.0}
  assert 0.3 < float((y == 0).mean()) < 0.7
  np.testing.assert_array_equal(layer.apply({}, x, deterministic=True), x)
  with pytest.raises(ValueError):
    layer.apply({}, x)  # deterministic unset
  with pytest.raises(errors.InvalidRngError):
    layer.apply({}, x, deterministic=False)
  # rate 0 needs no rng; rate 1 gives zeros.
  np.testing.assert_array_equal(
    nn.Dropout(0.0).apply({}, x, deterministic=False), x
  )
  np.testing.assert_array_equal(
    nn.Dropout(1.0).apply({}, x, deterministic=False), 0
  )
  y = nn.Dropout(0.5, broadcast_dims=(0,), deterministic=False).apply(
    {}, x, rngs={'dropout': KEY}
  )
  assert (y == y[:1]).all()
  y = nn.Dropout(0.5, rng_collection='noise').apply(
    {}, x, deterministic=False, rngs={'noise': KEY}
  )
  assert y.shape == x.shape
  y2 = nn.Dropout(0.5).apply({}, x, deterministic=False, rng=jax.random.key(3))
  assert y2.shape == x.shape


def test_dropout_mask_is_flax_key():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.Dropout(0.5, deterministic=False)(x)

  x = jnp.ones((4, 4))
  a = M().apply({}, x, rngs={'dropout': KEY})
  b = M().apply({}, x, rngs={'dropout': KEY})
  np.testing.assert_array_equal(a, b)
  c = M().apply({}, x, rngs={'dropout': jax.random.key(1)})
  assert not np.array_equal(a, c)


def test_prelu():
  layer = nn.PReLU(negative_slope_init=0.2)
  x = jnp.array([-2.0, 0.0, 3.0])
  v = layer.init(KEY, x)
  assert jax.tree_util.tree_map(jnp.shape, v) == {
    'params': {'negative_slope': ()}
  }
  np.testing.assert_allclose(layer.apply(v, x), [-0.4, 0.0, 3.0], rtol=1e-6)
  y = layer.apply(v, x.astype(jnp.bfloat16))
  assert y.dtype == jnp.bfloat16


def test_pooling_exports():
  x = jnp.arange(16.0).reshape(1, 4, 4, 1)
  y = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
  np.testing.assert_allclose(y[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])
  np.testing.assert_allclose(
    nn.max_pool(x, (2, 2), (2, 2))[0, :, :, 0], [[5, 7], [13, 15]]
  )
  np.testing.assert_allclose(
    nn.min_pool(x, (2, 2), (2, 2))[0, :, :, 0], [[0, 2], [8, 10]]
  )
  y = nn.pool(x, 0.0, jax.lax.add, (2, 2), None, ((1, 1), (1, 1)))
  assert y.shape == (1, 5, 5, 1)


def test_activation_and_initializer_exports():
  assert nn.relu is jax.nn.relu and nn.tanh is jnp.tanh
  assert nn.swish is jax.nn.swish and nn.normalize is jax.nn.standardize
  assert nn.activation.PReLU is nn.PReLU
  assert nn.initializers.lecun_normal is jax.nn.initializers.lecun_normal
  assert nn.zeros is jax.nn.initializers.zeros
  np.testing.assert_array_equal(
    nn.initializers.ones_init()(KEY, (2,), jnp.float32), [1.0, 1.0]
  )
  assert nn.dtypes.promote_dtype(jnp.ones(1, jnp.int8))[0].dtype == jnp.float32


def test_every_plugin_name_resolves():
  import importlib

  for export in first_party_exports('flax-layers'):
    if export.namespace != 'flax.linen':
      continue
    module, _, attr = export.target.partition(':')
    if attr:
      provider = importlib.import_module(module)
      assert getattr(nn, export.name) is getattr(provider, attr), attr
    else:
      assert getattr(nn, export.name).__name__ == module


def test_module_reprs_and_fields():
  r = repr(nn.Dense(3))
  assert r.startswith('Dense(') and 'features = 3' in r
  assert 'kernel_init = init' in r
  assert [f for f in nn.Dense.__dataclass_fields__][:4] == [
    'features',
    'use_bias',
    'dtype',
    'param_dtype',
  ]
