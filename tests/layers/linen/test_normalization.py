"""Linen normalization layers: variables, numerics, dtypes and errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import errors
from flax import linen as nn

KEY = jax.random.key(0)


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def _norm(x, axes, eps):
  mean = x.mean(axes, keepdims=True)
  var = x.var(axes, keepdims=True)
  return (x - mean) / np.sqrt(var + eps)


def test_batch_norm_train_and_eval():
  x = np.asarray(jax.random.normal(KEY, (8, 3))) * 2 + 1
  bn = nn.BatchNorm(use_running_average=False, momentum=0.9)
  v = bn.init(KEY, x)
  assert shapes(v) == {
    'params': {'scale': (3,), 'bias': (3,)},
    'batch_stats': {'mean': (3,), 'var': (3,)},
  }
  # Not updated during init.
  np.testing.assert_array_equal(v['batch_stats']['mean'], 0)
  np.testing.assert_array_equal(v['batch_stats']['var'], 1)
  assert v['batch_stats']['mean'].dtype == jnp.float32
  y, upd = bn.apply(v, x, mutable=['batch_stats'])
  np.testing.assert_allclose(y, _norm(x, 0, 1e-5), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(
    upd['batch_stats']['mean'], 0.1 * x.mean(0), rtol=1e-5
  )
  np.testing.assert_allclose(
    upd['batch_stats']['var'], 0.9 + 0.1 * x.var(0), rtol=1e-5
  )
  # Eval mode uses the stored statistics.
  stats = upd['batch_stats']
  y = nn.BatchNorm().apply(
    {'params': v['params'], 'batch_stats': stats}, x, use_running_average=True
  )
  ref = (np.asarray(x) - np.asarray(stats['mean'])) / np.sqrt(
    np.asarray(stats['var']) + 1e-5
  )
  np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
  with pytest.raises(errors.ModifyScopeVariableError):
    bn.apply(v, x)


def test_batch_norm_merge_param_and_axis():
  x = jnp.ones((2, 3, 4))
  with pytest.raises(ValueError):
    nn.BatchNorm().init(KEY, x)
  with pytest.raises(ValueError):
    nn.BatchNorm(use_running_average=True).init(
      KEY, x, use_running_average=True
    )
  v = nn.BatchNorm(axis=1).init(KEY, x, use_running_average=False)
  assert shapes(v['batch_stats']) == {'mean': (3,), 'var': (3,)}
  v = nn.BatchNorm(axis=(1, 2), use_bias=False).init(
    KEY, x, use_running_average=False
  )
  assert shapes(v['params']) == {'scale': (3, 4)}


def test_batch_norm_dtypes_and_axis_name():
  x = jnp.ones((4, 3), jnp.bfloat16)
  y, v = nn.BatchNorm(use_running_average=False).init_with_output(KEY, x)
  assert y.dtype == jnp.float32
  y = nn.BatchNorm(use_running_average=False, dtype=jnp.bfloat16).apply(
    v, x, mutable=['batch_stats']
  )[0]
  assert y.dtype == jnp.bfloat16
  assert v['batch_stats']['mean'].dtype == jnp.float32

  bn = nn.BatchNorm(use_running_average=False, axis_name='batch')
  xs = jax.random.normal(KEY, (2, 5, 3))
  v = bn.init(KEY, xs[0])  # no pmean during init
  y, upd = jax.vmap(
    lambda x: bn.apply(v, x, mutable=['batch_stats']), axis_name='batch'
  )(xs)
  flat = np.asarray(xs).reshape(10, 3)
  np.testing.assert_allclose(
    y.reshape(10, 3), _norm(flat, 0, 1e-5), rtol=1e-4, atol=1e-4
  )


def test_layer_norm():
  x = np.asarray(jax.random.normal(KEY, (2, 3, 4)))
  ln = nn.LayerNorm()
  v = ln.init(KEY, x)
  assert shapes(v) == {'params': {'scale': (4,), 'bias': (4,)}}
  np.testing.assert_allclose(
    ln.apply(v, x), _norm(x, -1, 1e-6), rtol=1e-4, atol=1e-5
  )
  ln = nn.LayerNorm(reduction_axes=(1, 2), feature_axes=(1, 2), epsilon=1e-3)
  v = ln.init(KEY, x)
  assert shapes(v['params']) == {'scale': (3, 4), 'bias': (3, 4)}
  np.testing.assert_allclose(
    ln.apply(v, x), _norm(x, (1, 2), 1e-3), rtol=1e-4, atol=1e-5
  )
  y = nn.LayerNorm(use_scale=False, use_bias=False).init_with_output(
    KEY, jnp.asarray(x, jnp.bfloat16)
  )
  assert y[0].dtype == jnp.bfloat16 and y[1] == {}


def test_rms_norm():
  x = np.asarray(jax.random.normal(KEY, (2, 5)))
  rms = nn.RMSNorm()
  v = rms.init(KEY, x)
  assert shapes(v) == {'params': {'scale': (5,)}}
  ref = x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6)
  np.testing.assert_allclose(rms.apply(v, x), ref, rtol=1e-5, atol=1e-6)


def test_group_norm():
  x = np.asarray(jax.random.normal(KEY, (2, 3, 6)))
  gn = nn.GroupNorm(num_groups=3)
  v = gn.init(KEY, x)
  assert shapes(v) == {'params': {'scale': (6,), 'bias': (6,)}}
  g = x.reshape(2, 3, 3, 2)
  ref = _norm(g, (1, 3), 1e-6).reshape(2, 3, 6)
  np.testing.assert_allclose(gn.apply(v, x), ref, rtol=1e-4, atol=1e-5)
  v2 = nn.GroupNorm(num_groups=None, group_size=2).init(KEY, x)
  np.testing.assert_allclose(
    nn.GroupNorm(num_groups=None, group_size=2).apply(v2, x),
    ref,
    rtol=1e-4,
    atol=1e-5,
  )
  with pytest.raises(ValueError, match='Either `num_groups` or `group_size`'):
    nn.GroupNorm(num_groups=3, group_size=2).init(KEY, x)
  with pytest.raises(ValueError, match=r'Number of groups \(4\) does not'):
    nn.GroupNorm(num_groups=4).init(KEY, x)
  with pytest.raises(ValueError, match='not multiple of the group size'):
    nn.GroupNorm(num_groups=None, group_size=4).init(KEY, x)


def test_instance_norm():
  x = np.asarray(jax.random.normal(KEY, (2, 4, 5, 3)))
  inn = nn.InstanceNorm()
  v = inn.init(KEY, x)
  assert shapes(v) == {'params': {'scale': (3,), 'bias': (3,)}}
  np.testing.assert_allclose(
    inn.apply(v, x), _norm(x, (1, 2), 1e-6), rtol=1e-4, atol=1e-4
  )
  with pytest.raises(ValueError, match='cannot include the leading'):
    nn.InstanceNorm(feature_axes=0).init(KEY, x)


def test_spectral_norm():
  class Foo(nn.Module):
    @nn.compact
    def __call__(self, x, train):
      x = nn.Dense(3)(x)
      return nn.SpectralNorm(nn.Dense(4), n_steps=10)(x, update_stats=train)

  x = jax.random.normal(KEY, (2, 2))
  v = Foo().init(KEY, x, False)
  assert shapes(v) == {
    'params': {
      'Dense_0': {'kernel': (2, 3), 'bias': (3,)},
      'Dense_1': {'kernel': (3, 4), 'bias': (4,)},
    },
    'batch_stats': {
      'SpectralNorm_0': {'Dense_1/kernel/u': (1, 4), 'Dense_1/kernel/sigma': ()}
    },
  }
  for _ in range(3):
    _, upd = Foo().apply(v, x, True, mutable=['batch_stats'])
    v = {**v, **upd}
  sigma = v['batch_stats']['SpectralNorm_0']['Dense_1/kernel/sigma']
  w = np.asarray(v['params']['Dense_1']['kernel'])
  np.testing.assert_allclose(sigma, np.linalg.svd(w)[1][0], rtol=1e-3)


def test_weight_norm():
  class Foo(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.WeightNorm(nn.Dense(4))(x)

  x = jax.random.normal(KEY, (2, 3))
  v = Foo().init(KEY, x)
  assert shapes(v) == {
    'params': {
      'Dense_0': {'kernel': (3, 4), 'bias': (4,)},
      'WeightNorm_0': {'Dense_0/kernel/scale': (4,)},
    }
  }
  w = np.asarray(v['params']['Dense_0']['kernel'])
  b = np.asarray(v['params']['Dense_0']['bias'])
  w_n = w / np.linalg.norm(w, axis=0, keepdims=True)
  np.testing.assert_allclose(
    Foo().apply(v, x), np.asarray(x) @ w_n + b, rtol=1e-4, atol=1e-5
  )
