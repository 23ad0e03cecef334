"""Conv and ConvTranspose."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax import lax

from nnx_layer_helpers import assert_close
from nnx_layer_helpers import param_key
from nnx_layer_helpers import shapes


def _ref_conv(x, kernel, strides, padding, groups=1, dilation=None):
  n = kernel.ndim - 2
  dn = lax.conv_dimension_numbers(
    x.shape,
    kernel.shape,
    ('NHWC', 'HWIO', 'NHWC') if n == 2 else ('NWC', 'WIO', 'NWC'),
  )
  return lax.conv_general_dilated(
    x,
    kernel,
    strides,
    padding,
    rhs_dilation=dilation,
    dimension_numbers=dn,
    feature_group_count=groups,
  )


def test_conv_state_and_keys():
  layer = nnx.Conv(3, 4, kernel_size=(3, 3), rngs=nnx.Rngs(0))
  assert shapes(layer) == {
    'bias': ((4,), 'float32'),
    'kernel': ((3, 3, 3, 4), 'float32'),
  }
  init = jax.nn.initializers.lecun_normal()
  assert_close(
    layer.kernel[...], init(param_key(0, 0), (3, 3, 3, 4), jnp.float32), 0, 0
  )


def test_conv_numerics_same_and_valid():
  x = jax.random.normal(jax.random.key(0), (2, 8, 8, 3))
  for padding in ('SAME', 'VALID', 'same', ((1, 2), (0, 1))):
    layer = nnx.Conv(
      3,
      5,
      (3, 3),
      strides=(2, 1),
      padding=padding,
      bias_init=nnx.initializers.normal(1.0),
      rngs=nnx.Rngs(1),
    )
    lax_padding = padding.upper() if isinstance(padding, str) else padding
    expected = _ref_conv(x, layer.kernel[...], (2, 1), lax_padding)
    assert_close(
      layer(x), np.asarray(expected) + np.asarray(layer.bias[...]), atol=1e-4
    )


def test_conv_int_kernel_and_batch_dims():
  layer = nnx.Conv(2, 3, kernel_size=3, rngs=nnx.Rngs(0))
  assert layer.kernel.shape == (3, 2, 3)
  x = jax.random.normal(jax.random.key(0), (4, 5, 10, 2))
  y = layer(x)
  assert y.shape == (4, 5, 10, 3)
  flat = layer(x.reshape(20, 10, 2))
  assert_close(y.reshape(20, 10, 3), flat)
  # No batch dimension at all.
  assert_close(layer(x[0, 0]), y[0, 0])


def test_conv_groups_and_dilation():
  layer = nnx.Conv(
    4,
    6,
    (3,),
    feature_group_count=2,
    kernel_dilation=2,
    use_bias=False,
    rngs=nnx.Rngs(0),
  )
  assert layer.kernel.shape == (3, 2, 6)
  assert layer.bias is None
  x = jax.random.normal(jax.random.key(0), (1, 9, 4))
  expected = _ref_conv(
    x, layer.kernel[...], (1,), 'SAME', groups=2, dilation=(2,)
  )
  assert_close(layer(x), expected, atol=1e-4)
  with pytest.raises(ValueError):
    nnx.Conv(3, 6, (3,), feature_group_count=2, rngs=nnx.Rngs(0))


def test_conv_circular_and_causal():
  x = jax.random.normal(jax.random.key(0), (1, 6, 1))
  layer = nnx.Conv(
    1, 1, (3,), padding='CIRCULAR', use_bias=False, rngs=nnx.Rngs(0)
  )
  xp = jnp.concatenate([x[:, -1:], x, x[:, :1]], axis=1)
  assert_close(layer(x), _ref_conv(xp, layer.kernel[...], (1,), 'VALID'))
  causal = nnx.Conv(
    1, 1, (3,), padding='CAUSAL', use_bias=False, rngs=nnx.Rngs(0)
  )
  xp = jnp.pad(x, ((0, 0), (2, 0), (0, 0)))
  assert_close(causal(x), _ref_conv(xp, causal.kernel[...], (1,), 'VALID'))
  with pytest.raises(ValueError, match='Causal padding'):
    nnx.Conv(1, 1, (3, 3), padding='CAUSAL', rngs=nnx.Rngs(0))


def test_conv_mask():
  mask = jnp.zeros((3, 2, 4)).at[1].set(1.0)
  layer = nnx.Conv(2, 4, (3,), mask=mask, use_bias=False, rngs=nnx.Rngs(0))
  x = jax.random.normal(jax.random.key(0), (1, 5, 2))
  expected = _ref_conv(x, layer.kernel[...] * mask, (1,), 'SAME')
  assert_close(layer(x), expected)
  with pytest.raises(ValueError, match='Mask needs to have the same shape'):
    nnx.Conv(2, 4, (3,), mask=jnp.ones((2, 2)), rngs=nnx.Rngs(0))


def test_conv_dtype():
  layer = nnx.Conv(2, 2, (1,), dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
  assert layer(jnp.ones((1, 3, 2))).dtype == jnp.bfloat16
  assert layer.kernel[...].dtype == jnp.float32


def test_conv_transpose():
  layer = nnx.ConvTranspose(
    3, 4, kernel_size=(3, 3), strides=(2, 2), rngs=nnx.Rngs(0)
  )
  assert shapes(layer) == {
    'bias': ((4,), 'float32'),
    'kernel': ((3, 3, 3, 4), 'float32'),
  }
  x = jax.random.normal(jax.random.key(0), (1, 5, 5, 3))
  y = layer(x)
  assert y.shape == (1, 10, 10, 4)
  expected = lax.conv_transpose(
    x,
    layer.kernel[...],
    (2, 2),
    'SAME',
    dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
  )
  assert_close(y, np.asarray(expected) + np.asarray(layer.bias[...]), atol=1e-4)
  t = nnx.ConvTranspose(3, 4, (2, 2), transpose_kernel=True, rngs=nnx.Rngs(0))
  assert t.kernel.shape == (2, 2, 4, 3)
  assert t(x).shape == (1, 5, 5, 4)
