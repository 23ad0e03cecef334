"""Private helpers that libraries built on Flax import from the layer
modules by name (their own norm / conv layers); signatures and results as
Flax 0.12.8's."""

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn
from flax import nnx
from flax.linen.dtypes import promote_dtype
from flax.linen.linear import _canonicalize_tuple
from flax.linen.linear import _conv_dimension_numbers
from flax.linen.linear import _normalize_axes
from flax.linen.normalization import _abs_sq
from flax.linen.normalization import _canonicalize_axes
from flax.linen.normalization import _compute_stats
from flax.linen.normalization import _l2_normalize
from flax.linen.normalization import _normalize
from flax.nnx.nn import linear as nnx_linear
from flax.nnx.nn import normalization as nnx_norm
from flax.nnx.nn import recurrent as nnx_recurrent


def test_canonicalize_axes():
  assert _canonicalize_axes(3, -1) == (2,)
  assert _canonicalize_axes(4, (3, -3, 1)) == (1, 3)
  assert nnx_norm._canonicalize_axes(3, (-1, 0)) == (0, 2)


def test_compute_stats_dtypes_and_values():
  x = jax.random.normal(jax.random.key(0), (2, 5, 4)).astype(jnp.bfloat16)
  mean, var = _compute_stats(x, (1, 2), None)
  assert (mean.dtype, var.dtype) == (jnp.float32, jnp.float32)
  np.testing.assert_allclose(mean, [0.26273194, 0.00517883], rtol=1e-5)
  np.testing.assert_allclose(var, [1.2965218, 0.71794039], rtol=1e-5)
  mean, var = _compute_stats(x, (1, 2), None, force_float32_reductions=False)
  assert (mean.dtype, var.dtype) == (jnp.bfloat16, jnp.bfloat16)
  mean, var = nnx_norm._compute_stats(
    jnp.arange(24.0).reshape(2, 3, 4), (1, 2), None
  )
  np.testing.assert_allclose(mean, [5.5, 17.5])
  np.testing.assert_allclose(var, [11.916668, 11.916687], rtol=1e-5)


def test_abs_sq_and_l2_normalize():
  np.testing.assert_allclose(_abs_sq(jnp.array([1 + 2j, 3.0])), [5.0, 9.0])
  np.testing.assert_allclose(_l2_normalize(jnp.array([3.0, 4.0])), [0.6, 0.8])
  np.testing.assert_allclose(nnx_norm._abs_sq(jnp.array([1j])), [1.0])


class _CustomNorm(nn.Module):
  """A norm layer written the way libraries write theirs."""

  use_bias: bool = True
  dtype: object = None

  @nn.compact
  def __call__(self, x):
    mean, var = _compute_stats(x, (2,), self.dtype)
    return _normalize(
      self,
      x,
      mean,
      var,
      (2,),
      (2,),
      self.dtype,
      jnp.float32,
      1e-6,
      self.use_bias,
      True,
      nn.initializers.ones,
      nn.initializers.ones,
    )


def test_normalize_declares_params_and_normalizes():
  x = jax.random.normal(jax.random.key(0), (2, 5, 4)).astype(jnp.bfloat16)
  for use_bias, first in (
    (True, [1.7919278, 2.1753902, -0.15119326, 0.18387532]),
    (False, [0.79192787, 1.1753901, -1.1511933, -0.81612468]),
  ):
    layer = _CustomNorm(use_bias=use_bias)
    variables = layer.init(jax.random.key(0), x)
    names = ['scale', 'bias'] if use_bias else ['scale']
    assert list(variables['params']) == names
    y = layer.apply(variables, x)
    assert y.dtype == jnp.float32
    np.testing.assert_allclose(y[0, 0], first, rtol=1e-5)
  layer = _CustomNorm(dtype=jnp.bfloat16)
  y = layer.apply(layer.init(jax.random.key(0), x), x)
  assert y.dtype == jnp.bfloat16
  np.testing.assert_allclose(
    np.asarray(y[0, 0], np.float32),
    [1.7890625, 2.171875, -0.15136719, 0.18359375],
  )


def test_nnx_normalize():
  x = jnp.arange(24.0).reshape(2, 3, 4)
  mean, var = nnx_norm._compute_stats(x, (1, 2), None)
  y = nnx_norm._normalize(
    x, mean, var, jnp.ones(4) * 2, jnp.ones(4), (1, 2), (2,), jnp.float16, 1e-5
  )
  assert y.dtype == jnp.float16
  np.testing.assert_allclose(y[1, 2], [2.45, 3.027, 3.607, 4.188], rtol=1e-3)


def test_linear_helpers():
  for fn in (_canonicalize_tuple, nnx_linear._canonicalize_tuple):
    assert fn(3) == (3,)
    assert fn([1, 2]) == (1, 2)
    assert fn(range(2)) == (0, 1)
  assert _normalize_axes((-1, 0, -3), 4) == (0, 1, 3)
  assert _normalize_axes((2, 1), 3) == (1, 2)
  for fn in (_conv_dimension_numbers, nnx_linear._conv_dimension_numbers):
    dn = fn((1, 5, 5, 3))
    assert (dn.lhs_spec, dn.rhs_spec, dn.out_spec) == (
      (0, 3, 1, 2),
      (3, 2, 0, 1),
      (0, 3, 1, 2),
    )
    assert fn((2, 7, 4)).rhs_spec == (2, 1, 0)


def test_select_last_carry():
  seq = jnp.arange(2 * 5 * 3.0).reshape(5, 2, 3)
  np.testing.assert_array_equal(
    nnx_recurrent._select_last_carry(seq, jnp.array([2, 5])),
    [[6.0, 7.0, 8.0], [27.0, 28.0, 29.0]],
  )
  a, b = nnx_recurrent._select_last_carry((seq, seq * 2), jnp.array([1, 3]))
  np.testing.assert_array_equal(a, [[0.0, 1.0, 2.0], [15.0, 16.0, 17.0]])
  np.testing.assert_array_equal(b, [[0.0, 2.0, 4.0], [30.0, 32.0, 34.0]])


def test_linen_promote_dtype_returns_jax_arrays():
  param = nnx.Param(jnp.ones(2))
  kept = jnp.ones(2)
  out = promote_dtype(param, kept, np.ones(2, np.float32), None)
  # a Variable (or a NumPy array) becomes a JAX array of its value, so it
  # can go straight into jax.lax primitives; a JAX array of the dtype stays
  assert [type(o) for o in out[:3]] == [type(kept)] * 3 and out[3] is None
  assert out[1] is kept
  y = jax.lax.dot_general(out[0], out[1], (((0,), (0,)), ((), ())))
  assert float(y) == 2.0
