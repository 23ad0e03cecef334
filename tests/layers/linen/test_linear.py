"""Linen linear layers: parameter trees, numerics, dtypes and errors."""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from flax import linen as nn

KEY = jax.random.key(0)


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def _flax_key(root, *suffix):
  """Key of ``make_rng`` with the given suffix (see spec/README.md)."""
  data = b''.join(
    s.encode()
    if isinstance(s, str)
    else s.to_bytes((s.bit_length() + 7) // 8, 'big')
    for s in suffix
  )
  h = int.from_bytes(hashlib.sha1(data).digest()[:4], 'big')
  return jax.random.fold_in(root, h)


def test_dense_params_and_numerics():
  x = jax.random.normal(KEY, (2, 3))
  layer = nn.Dense(4)
  v = layer.init(KEY, x)
  assert shapes(v) == {'params': {'kernel': (3, 4), 'bias': (4,)}}
  assert list(v['params']) == ['kernel', 'bias']  # creation order
  k, b = v['params']['kernel'], v['params']['bias']
  np.testing.assert_array_equal(b, np.zeros(4))
  y = layer.apply(v, x)
  np.testing.assert_allclose(
    y, np.asarray(x) @ np.asarray(k), rtol=1e-5, atol=1e-6
  )
  # The kernel draws the first 'params' key of the root scope.
  expected = jax.nn.initializers.lecun_normal()(_flax_key(KEY, 1), (3, 4))
  np.testing.assert_array_equal(k, expected)


def test_dense_param_order_with_custom_inits():
  v = nn.Dense(2, bias_init=nn.initializers.normal(1.0)).init(
    KEY, jnp.ones((1, 3))
  )
  expected = jax.nn.initializers.normal(1.0)(_flax_key(KEY, 2), (2,))
  np.testing.assert_array_equal(v['params']['bias'], expected)


def test_dense_no_bias_and_dot_general():
  calls = []

  def dot_general(*args, **kwargs):
    calls.append(1)
    return lax.dot_general(*args, **kwargs)

  layer = nn.Dense(3, use_bias=False, dot_general=dot_general)
  v = layer.init(KEY, jnp.ones((2, 5)))
  assert shapes(v) == {'params': {'kernel': (5, 3)}}
  layer.apply(v, jnp.ones((2, 5)))
  assert calls


@pytest.mark.parametrize(
  'x_dtype, dtype, param_dtype, out_dtype',
  [
    (jnp.float32, None, jnp.float32, jnp.float32),
    (jnp.bfloat16, None, jnp.float32, jnp.float32),
    (jnp.bfloat16, None, jnp.bfloat16, jnp.bfloat16),
    (jnp.float32, jnp.bfloat16, jnp.float32, jnp.bfloat16),
    (jnp.int32, None, jnp.float32, jnp.float32),
  ],
)
def test_dense_dtypes(x_dtype, dtype, param_dtype, out_dtype):
  layer = nn.Dense(3, dtype=dtype, param_dtype=param_dtype)
  x = jnp.ones((2, 4), x_dtype)
  y, v = layer.init_with_output(KEY, x)
  assert y.dtype == out_dtype
  assert v['params']['kernel'].dtype == param_dtype


@pytest.mark.parametrize(
  'features, axis, batch_dims, x_shape, kernel, bias, out',
  [
    ((3, 4), -1, (), (2, 5), (5, 3, 4), (3, 4), (2, 3, 4)),
    (3, (-2, -1), (), (2, 4, 5), (4, 5, 3), (3,), (2, 3)),
    (3, -1, (0,), (2, 4, 5), (2, 5, 3), (2, 3), (2, 4, 3)),
  ],
)
def test_dense_general_shapes(
  features, axis, batch_dims, x_shape, kernel, bias, out
):
  layer = nn.DenseGeneral(features, axis=axis, batch_dims=batch_dims)
  y, v = layer.init_with_output(KEY, jnp.ones(x_shape))
  assert shapes(v['params']) == {'kernel': kernel, 'bias': bias}
  assert y.shape == out


def test_dense_general_numerics_and_flat_init():
  x = jax.random.normal(KEY, (2, 4, 5))
  layer = nn.DenseGeneral((2, 3), axis=(-2, -1), bias_init=nn.initializers.ones)
  v = layer.init(KEY, x)
  k = np.asarray(v['params']['kernel'])
  ref = np.einsum('nab,abcd->ncd', x, k) + 1.0
  np.testing.assert_allclose(layer.apply(v, x), ref, rtol=1e-5, atol=1e-5)
  # The initializer is called on the flat (20, 6) shape and reshaped.
  flat = jax.nn.initializers.lecun_normal()(_flax_key(KEY, 1), (20, 6))
  np.testing.assert_array_equal(k, np.asarray(flat).reshape(4, 5, 2, 3))


def test_dense_general_axes_in_any_order():
  # the kernel's axes follow the input's order, whatever order ``axis``
  # names them in
  x = jnp.arange(120.0).reshape(2, 3, 4, 5)
  for axis, batch_dims, kernel_shape, einsum in (
    ((3, -2), (), (4, 5, 2), 'bijk,jkl->bil'),
    ((-1, 1), (), (3, 5, 2), 'bijk,ikl->bjl'),
    ((3, 2), (0,), (2, 4, 5, 2), 'bijk,bjkl->bil'),
  ):
    layer = nn.DenseGeneral(2, axis=axis, batch_dims=batch_dims)
    variables = layer.init(jax.random.key(0), x)
    kernel = variables['params']['kernel']
    assert kernel.shape == kernel_shape
    np.testing.assert_allclose(
      layer.apply(variables, x), np.einsum(einsum, x, kernel), rtol=1e-5
    )


def test_dense_general_errors():
  with pytest.raises(ValueError, match='consecutive leading dimensions'):
    nn.DenseGeneral(3, batch_dims=(1,)).init(KEY, jnp.ones((2, 3, 4)))


def test_einsum():
  layer = nn.Einsum((5, 6, 7), 'abc,cde->abde')
  x = jax.random.normal(KEY, (3, 4, 5))
  v = layer.init(KEY, x)
  assert shapes(v['params']) == {'kernel': (5, 6, 7), 'bias': (6, 7)}
  k = np.asarray(v['params']['kernel'])
  np.testing.assert_allclose(
    layer.apply(v, x), np.einsum('abc,cde->abde', x, k), rtol=1e-5, atol=1e-5
  )
  layer = nn.Einsum((5, 6), use_bias=False)
  v = layer.init(KEY, x, 'abc,cd->abd')
  assert shapes(v['params']) == {'kernel': (5, 6)}
  with pytest.raises(ValueError, match='explicit'):
    nn.Einsum((5, 6), 'abc,cd').init(KEY, x)


def test_conv_params_and_numerics():
  x = jax.random.normal(KEY, (2, 6, 6, 3))
  layer = nn.Conv(features=4, kernel_size=(3, 3), padding='valid')
  v = layer.init(KEY, x)
  assert shapes(v['params']) == {'kernel': (3, 3, 3, 4), 'bias': (4,)}
  y = layer.apply(v, x)
  ref = lax.conv_general_dilated(
    x,
    v['params']['kernel'],
    (1, 1),
    'VALID',
    dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
  )
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
  assert y.shape == (2, 4, 4, 4)


def test_conv_variants():
  x = jnp.ones((2, 8, 3))
  v = nn.Conv(4, 3).init(KEY, x)  # int kernel_size means 1-D
  assert shapes(v['params']) == {'kernel': (3, 3, 4), 'bias': (4,)}
  y, v = nn.Conv(6, (3,), feature_group_count=3).init_with_output(
    KEY, jnp.ones((2, 8, 6))
  )
  assert v['params']['kernel'].shape == (3, 2, 6) and y.shape == (2, 8, 6)
  y = nn.Conv(4, (3,), strides=2).init_with_output(KEY, x)[0]
  assert y.shape == (2, 4, 4)
  y = nn.Conv(4, (3,), padding='CIRCULAR').init_with_output(KEY, x)[0]
  assert y.shape == (2, 8, 4)
  y = nn.Conv(4, (3,), padding='CAUSAL').init_with_output(KEY, x)[0]
  assert y.shape == (2, 8, 4)
  y = nn.Conv(4, (3,), padding=[(2, 0)]).init_with_output(KEY, x)[0]
  assert y.shape == (2, 8, 4)
  y = nn.Conv(4, (3,)).init_with_output(KEY, jnp.ones((8, 3)))[0]
  assert y.shape == (8, 4)
  y = nn.Conv(4, (3,)).init_with_output(KEY, jnp.ones((5, 2, 8, 3)))[0]
  assert y.shape == (5, 2, 8, 4)


def test_conv_causal_is_causal():
  layer = nn.Conv(1, (3,), padding='CAUSAL', use_bias=False)
  x = jnp.zeros((1, 6, 1)).at[0, 3, 0].set(1.0)
  v = layer.init(KEY, x)
  y = layer.apply(v, x)
  np.testing.assert_array_equal(y[0, :3, 0], 0)  # no leak to the past


def test_conv_mask_and_errors():
  mask = jnp.zeros((3, 2, 4)).at[0].set(1.0)
  layer = nn.Conv(4, (3,), mask=mask, use_bias=False, padding='VALID')
  x = jax.random.normal(KEY, (1, 5, 2))
  v = layer.init(KEY, x)
  k = np.asarray(v['params']['kernel']) * np.asarray(mask)
  ref = lax.conv_general_dilated(
    x, k, (1,), 'VALID', dimension_numbers=('NHC', 'HIO', 'NHC')
  )
  np.testing.assert_allclose(layer.apply(v, x), ref, rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match='Mask needs to have the same shape'):
    nn.Conv(4, (3,), mask=jnp.ones((3, 3))).init(KEY, x)
  with pytest.raises(ValueError, match='Causal padding is only implemented'):
    nn.Conv(4, (3, 3), padding='CAUSAL').init(KEY, jnp.ones((1, 5, 5, 2)))


def test_conv_transpose():
  x = jax.random.normal(KEY, (2, 4, 3))
  layer = nn.ConvTranspose(5, (3,), strides=(2,))
  v = layer.init(KEY, x)
  assert shapes(v['params']) == {'kernel': (3, 3, 5), 'bias': (5,)}
  y = layer.apply(v, x)
  ref = lax.conv_transpose(x, v['params']['kernel'], (2,), 'SAME')
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
  v = nn.ConvTranspose(5, (3,), transpose_kernel=True).init(KEY, x)
  assert v['params']['kernel'].shape == (3, 5, 3)
  y = nn.ConvTranspose(5, 3, strides=2, padding='CIRCULAR').init_with_output(
    KEY, x
  )[0]
  assert y.shape == (2, 8, 5)


def test_conv_local():
  x = jax.random.normal(KEY, (2, 6, 3))
  layer = nn.ConvLocal(4, (3,), padding='VALID')
  v = layer.init(KEY, x)
  assert shapes(v['params']) == {'kernel': (4, 9, 4), 'bias': (4, 4)}
  y = layer.apply(v, x)
  k, b = np.asarray(v['params']['kernel']), np.asarray(v['params']['bias'])
  # Output position 1 uses kernel[1] on the window x[:, 1:4]; the patch
  # features are ordered (in_features, window).
  patch = np.transpose(np.asarray(x)[:, 1:4, :], (0, 2, 1)).reshape(2, -1)
  np.testing.assert_allclose(y[:, 1], patch @ k[1] + b[1], rtol=1e-4, atol=1e-5)
  with pytest.raises(ValueError, match='feature_group_count'):
    nn.ConvLocal(4, (3,), feature_group_count=3).init(KEY, x)


def test_embed():
  layer = nn.Embed(num_embeddings=5, features=3)
  ids = jnp.array([[0, 4], [2, 2]])
  v = layer.init(KEY, ids)
  assert shapes(v) == {'params': {'embedding': (5, 3)}}
  emb = np.asarray(v['params']['embedding'])
  np.testing.assert_array_equal(layer.apply(v, ids), emb[np.asarray(ids)])
  expected = jax.nn.initializers.variance_scaling(
    1.0, 'fan_in', 'normal', out_axis=0
  )(_flax_key(KEY, 1), (5, 3))
  np.testing.assert_array_equal(emb, expected)
  q = jnp.ones((2, 3))
  np.testing.assert_allclose(
    layer.apply(v, q, method=layer.attend), np.ones((2, 3)) @ emb.T, rtol=1e-5
  )
  y = nn.Embed(5, 3, dtype=jnp.bfloat16).apply(v, ids)
  assert y.dtype == jnp.bfloat16
  with pytest.raises(ValueError, match='integer'):
    layer.apply(v, jnp.ones((2,)))


def test_default_kernel_init_module_path():
  from flax.layers.linen import linear

  assert linear.default_kernel_init.__name__ == 'init'
  assert nn.Dense(1).kernel_init is linear.default_kernel_init
  assert nn.linear.default_kernel_init is linear.default_kernel_init
