"""Tests of flax.layers.linear against plain JAX / NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from flax.layers import linear


def _rand(shape, seed=0):
  return jax.random.normal(jax.random.key(seed), shape)


def test_dense():
  x, k, b = _rand((2, 3, 4)), _rand((4, 5), 1), _rand((5,), 2)
  y = linear.dense(x, k, b)
  np.testing.assert_allclose(
    y, np.asarray(x) @ np.asarray(k) + np.asarray(b), rtol=1e-5, atol=1e-5
  )
  np.testing.assert_allclose(
    linear.dense(x, k), np.asarray(x) @ np.asarray(k), rtol=1e-5, atol=1e-5
  )


def test_dense_general_spec_and_apply():
  spec = linear.dense_general_spec((2, 4, 5), features=3, axis=(-2, -1))
  assert spec.kernel_shape == (4, 5, 3) and spec.bias_shape == (3,)
  x, k, b = _rand((2, 4, 5)), _rand((4, 5, 3), 1), _rand((3,), 2)
  y = linear.dense_general(x, k, b, spec)
  np.testing.assert_allclose(
    y, np.einsum('nab,abf->nf', x, k) + np.asarray(b), rtol=1e-5, atol=1e-5
  )
  spec = linear.dense_general_spec((2, 4, 5), features=(3, 6))
  assert spec.kernel_shape == (5, 3, 6) and spec.bias_shape == (3, 6)
  spec = linear.dense_general_spec((2, 4, 5), features=3, batch_dims=(0,))
  assert spec.kernel_shape == (2, 5, 3) and spec.bias_shape == (2, 3)
  k, b = _rand((2, 5, 3), 3), _rand((2, 3), 4)
  y = linear.dense_general(x, k, b, spec)
  ref = np.einsum('nib,nbf->nif', x, k) + np.asarray(b)[:, None, :]
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_dense_general_batch_dims_error():
  with pytest.raises(ValueError, match='must be consecutive leading'):
    linear.dense_general_spec((2, 4, 5), features=3, batch_dims=(1,))


def test_flat_kernel_init_uses_2d_shape():
  seen = []

  def init(key, shape, dtype):
    seen.append(shape)
    return jnp.arange(np.prod(shape), dtype=dtype).reshape(shape)

  wrapped = linear.flat_kernel_init(init, n_batch=1, n_axis=2, n_features=2)
  k = wrapped(jax.random.key(0), (2, 3, 4, 5, 6), jnp.float32)
  assert seen == [(24, 30)] and k.shape == (2, 3, 4, 5, 6)
  bias = linear.flat_bias_init(init, n_batch=1, n_features=2)
  assert bias(jax.random.key(0), (2, 5, 6), jnp.float32).shape == (2, 5, 6)
  assert seen[-1] == (60,)


@pytest.mark.parametrize(
  'padding, rank, expected',
  [
    ('same', 2, 'same'),
    ('VALID', 1, 'VALID'),
    ('REFLECT', 2, 'REFLECT'),
    (2, 2, [(2, 2), (2, 2)]),
    ((1, 2), 2, [(1, 1), (2, 2)]),
    ([(1, 2), (0, 3)], 2, [(1, 2), (0, 3)]),
    ([[1, 2]], 1, [(1, 2)]),
  ],
)
def test_canonicalize_padding(padding, rank, expected):
  # Strings are kept as given, other forms become a list of pairs.
  out = linear.canonicalize_padding(padding, rank)
  assert out == expected and type(out) is type(expected)


def test_canonicalize_padding_error():
  with pytest.raises(ValueError, match='Invalid padding format'):
    linear.canonicalize_padding((1, 2, 3), 2)


def _ref_conv(x, k, strides, padding, lhs=None, rhs=None, groups=1):
  dn = lax.conv_dimension_numbers(x.shape, k.shape, ('NHWC', 'HWIO', 'NHWC'))
  return lax.conv_general_dilated(
    x,
    k,
    strides,
    padding,
    lhs_dilation=lhs,
    rhs_dilation=rhs,
    dimension_numbers=dn,
    feature_group_count=groups,
  )


def test_conv_matches_lax():
  x, k, b = _rand((2, 6, 6, 4)), _rand((3, 3, 2, 6), 1), _rand((6,), 2)
  spec = linear.conv_spec((3, 3), strides=2, padding='SAME')
  y = linear.conv(x, k, b, spec, feature_group_count=2)
  ref = np.asarray(_ref_conv(x, k, (2, 2), 'SAME', groups=2)) + np.asarray(b)
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_conv_batch_axes():
  x, k = _rand((3, 2, 6, 4)), _rand((3, 4, 5), 1)
  spec = linear.conv_spec(3, padding='VALID')
  y = linear.conv(x, k, None, spec)
  assert y.shape == (3, 2, 4, 5)
  ref = linear.conv(x.reshape(6, 6, 4), k, None, spec).reshape(3, 2, 4, 5)
  np.testing.assert_allclose(y, ref, rtol=1e-6)
  assert linear.conv(x[0, 0], k, None, spec).shape == (4, 5)


def test_conv_circular_and_causal():
  x, k = _rand((1, 5, 1)), _rand((3, 1, 1), 1)
  spec = linear.conv_spec((3,), padding='CIRCULAR')
  y = linear.conv(x, k, None, spec)
  xp = np.concatenate([x[:, -1:], x, x[:, :1]], axis=1)
  ref = _ref_conv1d(xp, k)
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
  spec = linear.conv_spec((3,), padding='CAUSAL', kernel_dilation=2)
  y = linear.conv(x, k, None, spec)
  xp = np.concatenate([np.zeros((1, 4, 1)), x], axis=1)
  ref = _ref_conv1d(xp, k, rhs=(2,))
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
  assert y.shape == x.shape
  with pytest.raises(ValueError, match='Causal padding is only implemented'):
    linear.conv_spec((3, 3), padding='CAUSAL')


def _ref_conv1d(x, k, rhs=None):
  dn = lax.conv_dimension_numbers(x.shape, k.shape, ('NHC', 'HIO', 'NHC'))
  return lax.conv_general_dilated(
    jnp.asarray(x, jnp.float32),
    k,
    (1,),
    'VALID',
    rhs_dilation=rhs,
    dimension_numbers=dn,
  )


def test_conv_spec_cached_and_errors():
  assert linear.conv_spec([3, 3], [1, 1]) is linear.conv_spec((3, 3), (1, 1))
  with pytest.raises(ValueError, match='strides'):
    linear.conv_spec((3, 3), strides=(1, 1, 1))
  with pytest.raises(TypeError, match='kernel_size'):
    linear.conv_spec('a3')
  with pytest.raises(ValueError, match='feature_group_count'):
    linear.conv_kernel_shape((3,), 5, 4, feature_group_count=2)


def test_conv_local():
  spec = linear.conv_spec((2, 2), padding='VALID')
  out_sp = linear.conv_local_output_spatial((1, 4, 4, 3), 5, spec)
  assert out_sp == (3, 3)
  x = _rand((1, 4, 4, 3))
  k = _rand((3, 3, 2 * 2 * 3, 5), 1)
  b = _rand((3, 3, 5), 2)
  y = linear.conv_local(x, k, b, spec)
  assert y.shape == (1, 3, 3, 5)
  # Each output position uses its own kernel: check one position by hand.
  xn, kn = np.asarray(x), np.asarray(k)
  patch = xn[0, 1:3, 2:4, :]  # (2, 2, 3)
  # conv_general_dilated_local orders the patch features as (in, kh, kw).
  feat = np.transpose(patch, (2, 0, 1)).reshape(-1)
  np.testing.assert_allclose(
    y[0, 1, 2], feat @ kn[1, 2] + np.asarray(b)[1, 2], rtol=1e-4
  )


def test_conv_transpose_matches_lax():
  x, k, b = _rand((2, 4, 4, 3)), _rand((3, 3, 3, 5), 1), _rand((5,), 2)
  spec = linear.conv_spec((3, 3), strides=(2, 2), padding='SAME')
  y = linear.conv_transpose(x, k, b, spec)
  ref = np.asarray(lax.conv_transpose(x, k, (2, 2), 'SAME')) + np.asarray(b)
  np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
  assert y.shape == (2, 8, 8, 5)


def test_conv_transpose_circular_is_periodic():
  # A circular transposed convolution equals the VALID one folded modulo
  # the output period (input size * stride).
  x, k = _rand((1, 4, 1)), _rand((3, 1, 1), 1)
  spec = linear.conv_spec((3,), strides=(2,), padding='CIRCULAR')
  y = linear.conv_transpose(x, k, None, spec)
  assert y.shape == (1, 8, 1)
  full = np.asarray(lax.conv_transpose(x, k, (2,), 'VALID'))[0, :, 0]
  period = 8
  size = full.shape[0]
  extra = -(size - period) % (2 * period)
  left = (extra + 1) // 2
  folded = np.zeros(period)
  for i, v in enumerate(full):
    folded[(i + left) % period] += v
  np.testing.assert_allclose(y[0, :, 0], folded, rtol=1e-5, atol=1e-6)
  with pytest.raises(RuntimeError, match='Unrecognized padding type'):
    linear.conv_transpose(x, k, None, linear.conv_spec((3,), padding='CAUSAL'))


def test_einsum_bias_shape():
  assert linear.einsum_bias_shape('ab,bc->ac', 2, (3, 4)) == ((4,), (1, 4))
  assert linear.einsum_bias_shape('nta,hab->nthb', 3, (2, 3, 4)) == (
    (2, 4),
    (1, 1, 2, 4),
  )
  assert linear.einsum_bias_shape('...a,ab->...b', 4, (3, 5)) == (
    (5,),
    (1, 1, 1, 5),
  )
  with pytest.raises(ValueError, match='explicit'):
    linear.check_einsum_str('ab,bc')
  with pytest.raises(ValueError, match='exactly one comma'):
    linear.check_einsum_str('ab,bc,cd->ad')
  assert linear.check_einsum_str('ab, bc -> ac') == 'ab,bc->ac'


def test_embed():
  emb = _rand((5, 3))
  np.testing.assert_array_equal(
    linear.embed_lookup(emb, jnp.array([[1, 4]])), np.asarray(emb)[[[1, 4]]]
  )
  with pytest.raises(ValueError, match='integer'):
    linear.embed_lookup(emb, jnp.array([1.0]))
  q = _rand((2, 3), 1)
  np.testing.assert_allclose(
    linear.embed_attend(q, emb),
    np.asarray(q) @ np.asarray(emb).T,
    rtol=1e-5,
    atol=1e-5,
  )
  # A one-row table: every id selects its row, as in Flax 0.12.8.
  one = linear.embed_lookup(jnp.ones((1, 2)), jnp.array([0, 1, -1]))
  np.testing.assert_array_equal(one, np.ones((3, 2)))
