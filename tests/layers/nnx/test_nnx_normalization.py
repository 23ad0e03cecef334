"""BatchNorm, LayerNorm, RMSNorm, GroupNorm, InstanceNorm."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_layer_helpers import assert_close
from nnx_layer_helpers import shapes


def _norm(x, axes, eps):
  x = np.asarray(x, np.float64)
  mean = x.mean(axis=axes, keepdims=True)
  var = x.var(axis=axes, keepdims=True)
  return (x - mean) / np.sqrt(var + eps)


def test_batchnorm_state():
  layer = nnx.BatchNorm(3, rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((3,), 'float32'),
    'mean': ((3,), 'float32'),
    'scale': ((3,), 'float32'),
    'var': ((3,), 'float32'),
  }
  assert set(shapes(layer, nnx.BatchStat)) == {'mean', 'var'}
  assert set(shapes(layer, nnx.Param)) == {'bias', 'scale'}
  assert layer.use_running_average is False
  np.testing.assert_array_equal(layer.mean[...], np.zeros(3))
  np.testing.assert_array_equal(layer.var[...], np.ones(3))


def test_batchnorm_draws_two_keys():
  rngs = nnx.Rngs(0)
  nnx.BatchNorm(3, rngs=rngs)
  assert int(rngs.params.count[...]) == 2
  rngs = nnx.Rngs(0)
  nnx.BatchNorm(3, use_bias=False, use_scale=False, rngs=rngs)
  assert int(rngs.params.count[...]) == 0


def test_batchnorm_train_and_eval():
  layer = nnx.BatchNorm(4, momentum=0.9, epsilon=1e-5, rngs=nnx.Rngs(0))
  layer.scale[...] = jnp.arange(1.0, 5.0)
  layer.bias[...] = jnp.arange(4.0)
  x = jax.random.normal(jax.random.key(1), (8, 5, 4)) * 3 + 1
  y = layer(x)
  xn = np.asarray(x, np.float64)
  expected = _norm(xn, (0, 1), 1e-5) * np.arange(1, 5) + np.arange(4)
  assert_close(y, expected, atol=1e-4)
  assert_close(layer.mean[...], 0.1 * xn.mean((0, 1)), atol=1e-5)
  assert_close(layer.var[...], 0.9 + 0.1 * xn.var((0, 1)), atol=1e-4)
  # Eval mode uses (and keeps) the running statistics.
  layer.eval()
  assert layer.use_running_average is True
  mean, var = np.asarray(layer.mean[...]), np.asarray(layer.var[...])
  y = layer(x)
  expected = (xn - mean) / np.sqrt(var + 1e-5) * np.arange(1, 5)
  assert_close(y, expected + np.arange(4), atol=1e-4)
  assert_close(layer.mean[...], mean, 0, 0)
  # The call argument wins over the attribute.
  layer(x, use_running_average=False)
  assert not np.allclose(layer.mean[...], mean)


def test_batchnorm_call_argument_and_missing_flag():
  layer = nnx.BatchNorm(2, use_running_average=None, rngs=nnx.Rngs(0))
  with pytest.raises(ValueError, match='use_running_average'):
    layer(jnp.ones((2, 2)))
  y = layer(jnp.ones((2, 2)), use_running_average=True)
  assert_close(y, np.ones((2, 2)) / np.sqrt(1 + 1e-5))


def test_batchnorm_dtypes_and_axis():
  layer = nnx.BatchNorm(3, axis=1, rngs=nnx.Rngs(0))
  x = jax.random.normal(jax.random.key(0), (4, 3, 5))
  assert_close(layer(x), _norm(x, (0, 2), 1e-5), atol=1e-4)
  assert layer(x.astype(jnp.bfloat16)).dtype == jnp.float32
  half = nnx.BatchNorm(3, axis=1, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
  assert half(x).dtype == jnp.bfloat16
  assert half.mean[...].dtype == jnp.float32


def test_batchnorm_under_jit_updates_stats():
  layer = nnx.BatchNorm(2, rngs=nnx.Rngs(0))

  @nnx.jit
  def step(m, x):
    return m(x)

  step(layer, jnp.ones((3, 2)) * 2)
  assert_close(layer.mean[...], [0.02, 0.02])


def test_batchnorm_running_stats_are_not_differentiated():
  x = jnp.arange(6.0).reshape(2, 3)
  graphdef, state = nnx.split(nnx.BatchNorm(3, momentum=0.8, rngs=nnx.Rngs(0)))

  def new_stats(old_mean, x):
    fresh = jax.tree.map(lambda a: a, state)
    fresh['mean'][...] = old_mean
    layer = nnx.merge(graphdef, fresh)
    y = layer(x)
    return layer.mean[...], layer.var[...], y

  d_old, d_x = jax.jacobian(new_stats, argnums=(0, 1))(jnp.ones(3), x)[0]
  assert not np.any(d_old) and not np.any(d_x)
  d_var = jax.jacobian(new_stats, argnums=1)(jnp.ones(3), x)[1]
  assert not np.any(d_var)
  # the output still differentiates through the batch statistics
  d_y = jax.jacobian(new_stats, argnums=1)(jnp.ones(3), x)[2]
  assert np.any(d_y)
  # the stats still move
  mean, var, _ = new_stats(jnp.ones(3), x)
  assert_close(mean, 0.8 + 0.2 * np.array([1.5, 2.5, 3.5]))


def test_batchnorm_hijax_stats_update_under_grad():
  with nnx.var_defaults(hijax=True):
    model = nnx.Sequential(
      nnx.Linear(2, 3, rngs=nnx.Rngs(0)),
      nnx.BatchNorm(3, rngs=nnx.Rngs(0)),
    )
  x = jnp.arange(8.0).reshape(4, 2)

  @jax.jit
  def step(x):
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def loss(params):
      return (nnx.merge(graphdef, params, rest)(x) ** 3).mean()

    return jax.grad(loss)(nnx.with_vars(params, hijax=False))

  grads = step(x)
  assert np.any(grads['layers'][0]['kernel'][...])
  assert np.any(model.layers[1].mean[...])


def test_layernorm():
  layer = nnx.LayerNorm(4, rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((4,), 'float32'),
    'scale': ((4,), 'float32'),
  }
  x = jax.random.normal(jax.random.key(0), (3, 4))
  assert_close(layer(x), _norm(x, -1, 1e-6), atol=1e-5)
  no_bias = nnx.LayerNorm(4, use_bias=False, rngs=nnx.Rngs(0))
  assert set(shapes(no_bias)) == {'scale'}
  multi = nnx.LayerNorm(4, reduction_axes=(-2, -1), rngs=nnx.Rngs(0))
  x = jax.random.normal(jax.random.key(1), (2, 3, 4))
  assert_close(multi(x), _norm(x, (1, 2), 1e-6), atol=1e-5)


def test_rmsnorm():
  layer = nnx.RMSNorm(4, rngs=nnx.Rngs(0))
  assert shapes(layer) == {'scale': ((4,), 'float32')}
  x = jax.random.normal(jax.random.key(0), (3, 4))
  xn = np.asarray(x, np.float64)
  expected = xn / np.sqrt((xn**2).mean(-1, keepdims=True) + 1e-6)
  assert_close(layer(x), expected, atol=1e-5)


def test_groupnorm():
  layer = nnx.GroupNorm(6, num_groups=3, rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((6,), 'float32'),
    'scale': ((6,), 'float32'),
  }
  x = jax.random.normal(jax.random.key(0), (2, 5, 6))
  xg = np.asarray(x, np.float64).reshape(2, 5, 3, 2)
  expected = _norm(xg, (1, 3), 1e-6).reshape(2, 5, 6)
  assert_close(layer(x), expected, atol=1e-5)
  by_size = nnx.GroupNorm(6, num_groups=None, group_size=2, rngs=nnx.Rngs(0))
  assert_close(by_size(x), expected, atol=1e-5)


def test_groupnorm_errors():
  with pytest.raises(ValueError, match='Either `num_groups` or `group_size`'):
    nnx.GroupNorm(6, num_groups=3, group_size=2, rngs=nnx.Rngs(0))
  with pytest.raises(ValueError, match='does not divide'):
    nnx.GroupNorm(6, num_groups=4, rngs=nnx.Rngs(0))
  with pytest.raises(ValueError, match='not multiple of the group size'):
    nnx.GroupNorm(6, num_groups=None, group_size=4, rngs=nnx.Rngs(0))


def test_instancenorm():
  layer = nnx.InstanceNorm(3, rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((3,), 'float32'),
    'scale': ((3,), 'float32'),
  }
  x = jax.random.normal(jax.random.key(0), (2, 4, 5, 3))
  assert_close(layer(x), _norm(x, (1, 2), 1e-6), atol=1e-5)


def test_batchnorm_axis_name_under_vmap():
  layer = nnx.BatchNorm(3, axis_name='batch', rngs=nnx.Rngs(0))
  x = jax.random.normal(jax.random.key(0), (4, 5, 3))
  y = nnx.vmap(lambda m, x: m(x), in_axes=(None, 0), axis_name='batch')(
    layer, x
  )
  flat = np.asarray(x, np.float64).reshape(20, 3)
  expected = (np.asarray(x) - flat.mean(0)) / np.sqrt(flat.var(0) + 1e-5)
  assert_close(y, expected, atol=1e-4)
  assert_close(layer.mean[...], 0.01 * flat.mean(0), atol=1e-6)
