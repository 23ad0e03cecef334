"""flax.layers.fp8 / fp8_meta: FP8 quantization with delayed scaling.

Expected values were taken from Flax 0.12.8 on the same inputs.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from flax.layers import fp8
from flax.layers import fp8_meta

E4M3, E5M2 = jnp.float8_e4m3fn, jnp.float8_e5m2
X = jnp.array([[0.3, -1.7, 2.5], [10.0, 0.01, -3.3]], jnp.float32)
K = jnp.array([[0.5, -0.25], [1.5, 2.0], [-0.75, 3.0]], jnp.float32)
G = jnp.array([[1.0, -2.0], [0.5, 3.0]])
DN = (((1,), (0,)), ((), ()))
S1, S2, S3 = jnp.array([0.5]), jnp.array([0.25]), jnp.array([0.125])
H1 = jnp.array([0.0, 4.0, 2.0, 0.0])
H2 = jnp.array([1.0, 2.0, 3.0, 6.0])
H3 = jnp.array([0.5, 0.0, 0.0, 0.0])


def close(a, b):
  np.testing.assert_allclose(np.asarray(a, np.float32), b, rtol=1e-6)


def test_get_fp8_max():
  assert float(fp8.get_fp8_max(E4M3, jnp.float32)) == 448.0
  assert float(fp8.get_fp8_max(E5M2, jnp.float32)) == 57344.0
  assert float(fp8.get_fp8_max(jnp.float8_e4m3fnuz, jnp.float32)) == 240.0
  assert float(fp8.get_fp8_max(jnp.float8_e5m2fnuz, jnp.float32)) == 57344.0
  assert fp8.get_fp8_max(E4M3, jnp.bfloat16).dtype == jnp.bfloat16
  with pytest.raises(AssertionError, match='not an FP8 dtype'):
    fp8.get_fp8_max(jnp.float16, jnp.float32)


def test_quantize_dequantize():
  q = fp8.quantize(X, E5M2, jnp.array([0.02]), jnp.float32)
  assert q.dtype == E5M2
  close(q, [[16, -80, 128], [512, 0.5, -160]])
  # Saturates at the FP8 maximum instead of overflowing.
  q = fp8.quantize(X, E4M3, jnp.array([0.02]), jnp.float32)
  assert float(q[1, 0].astype(jnp.float32)) == 448.0
  d = fp8.dequantize(q, jnp.bfloat16, jnp.array([0.02]))
  assert d.dtype == jnp.bfloat16
  y = fp8.qdq(X.astype(jnp.bfloat16), E4M3, jnp.array([0.02]), jnp.float32)
  assert y.dtype == jnp.bfloat16
  close(y[1], [9.0, 0.010009765625, -3.203125])


def test_compute_scale():
  # scale = amax * 2**margin / fp8_max; the old scale when amax is unusable.
  close(fp8.compute_scale(jnp.float32(4.0), jnp.ones((1,)), 448.0, 1), [1 / 56])
  for bad in (0.0, -3.0, jnp.inf, jnp.nan):
    out = fp8.compute_scale(jnp.float32(bad), jnp.array([0.3]), 448.0)
    close(out, [0.3])


def test_compute_amax_history():
  # The history turns one step and the new amax goes in front.
  close(fp8.compute_amax_history(X, H1), [10.0, 2.0, 0.0, 0.0])
  out = fp8.compute_amax_history(X, jnp.zeros((3, 2)))
  close(out, [[10, 10], [0, 0], [0, 0]])
  assert fp8.compute_amax_history(X.astype(jnp.bfloat16), H1).dtype == (
    jnp.float32
  )


def test_update_and_in_qdq():
  new_scale, new_history = fp8.update_fp8_meta(X, E4M3, S1, H1)
  close(new_scale, [4 / 448])
  close(new_history, [10.0, 2.0, 0.0, 0.0])
  expected = [
    [0.2857142984867096, -1.7142858505249023, 2.5714287757873535],
    [4.0, 0.01004464365541935, -3.4285717010498047],
  ]
  close(fp8.in_qdq(jnp.float32, E4M3, X, S1, H1), expected)
  qx, scale, history = fp8.quantize_dequantize_update(
    X, E4M3, S1, H1, jnp.float32
  )
  close(qx, expected)
  # The gradient passes straight through; the state's is its new value.
  grads = jax.grad(
    lambda x, s, h: jnp.sum(fp8.in_qdq(jnp.float32, E4M3, x, s, h) * 2),
    argnums=(0, 1, 2),
  )(X, S1, H1)
  close(grads[0], np.full((2, 3), 2.0))
  close(grads[1], [4 / 448])
  close(grads[2], [10.0, 2.0, 0.0, 0.0])


def test_out_qdq_quantizes_the_gradient():
  assert fp8.out_qdq(jnp.float32, E5M2, X, S1, H1) is X
  g, scale, history = fp8.out_qdq_bwd(jnp.float32, E5M2, (S1, H1), X)
  close(
    g,
    [
      [0.2857142984867096, -1.7142858505249023, 2.2857143878936768],
      [4.0, 0.008928571827709675, -3.4285717010498047],
    ],
  )
  close(scale, [4 / 57344])


def test_in_q_and_out_dq():
  q, scale = fp8.in_q(jnp.float32, E4M3, X, S1, H1)
  assert q.dtype == E4M3
  close(q, [[32, -192, 288], [448, 1.125, -384]])
  close(scale, [4 / 448])
  assert fp8.in_q_bwd(jnp.float32, E4M3, (S1, H1), None)[0] is None
  y = fp8.out_dq(jnp.float32, S1, jnp.array([3.0]), X)
  close(y, np.asarray(X) * 1.5)
  grads = jax.grad(
    lambda x, a: jnp.sum(fp8.out_dq(jnp.float32, a, a, x)), argnums=(0, 1)
  )(X, S1)
  close(grads[0], np.ones((2, 3)))
  close(grads[1], [0.0])


def test_dot_general_transposes_match_autodiff():
  a = jnp.arange(120.0).reshape(2, 3, 4, 5) / 50
  b = jnp.arange(240.0).reshape(2, 5, 6, 4) / 70
  dn = (((3, 2), (1, 3)), ((0,), (0,)))
  y, vjp = jax.vjp(lambda a, b: lax.dot_general(a, b, dn), a, b)
  gy = jnp.cos(jnp.arange(y.size, dtype=jnp.float32)).reshape(y.shape)
  da, db = vjp(gy)
  kw = dict(dimension_numbers=dn, precision=None, preferred_element_type=None)
  np.testing.assert_allclose(
    fp8.dot_general_transpose_lhs(gy, a, b, **kw), da, rtol=1e-5
  )
  np.testing.assert_allclose(
    fp8.dot_general_transpose_rhs(gy, a, b, **kw), db, rtol=1e-5
  )


def test_dot_general_with_precision():
  y = fp8.dot_general_with_precision(X, K, DN)
  np.testing.assert_allclose(y, X @ K, rtol=1e-6)
  with pytest.warns(UserWarning, match='disregard'):
    fp8.dot_general_with_precision(X, K, DN, None, jnp.float32)
  dx = jax.grad(
    lambda x: jnp.sum(fp8.dot_general_with_precision(x, K, DN) * G)
  )(X)
  np.testing.assert_allclose(dx, G @ K.T, rtol=1e-6)


def test_fp8_scaled_dot_general_values_and_grads():
  def run(x, k, *state):
    return fp8.fp8_scaled_dot_general(
      x,
      k,
      DN,
      preferred_element_type=jnp.float32,
      **dict(zip(fp8._SCALED_DOT_STATE, state)),
    )

  state = (S1, S2, S3, H1, H2, H3)
  close(
    run(X, K, *state),
    [
      [-4.362245082855225, 4.339285850524902],
      [4.515067100524902, -11.230628967285156],
    ],
  )
  grads = jax.grad(lambda *a: jnp.sum(run(*a) * G), argnums=tuple(range(8)))(
    X, K, *state
  )
  close(
    grads[0],
    [
      [0.361607164144516, -0.2142857313156128, -1.8750001192092896],
      [0.1205357238650322, 1.7142858505249023, 1.1250001192092896],
    ],
  )
  close(
    grads[1],
    [
      [2.142857313156128, 1.8571430444717407],
      [-0.852120578289032, 0.8621652126312256],
      [-0.4285714626312256, -3.000000238418579],
    ],
  )
  close(grads[2], [0.008928571827709675])
  close(grads[3], [0.013392857275903225])
  close(grads[4], [8.71930842549773e-06])
  close(grads[5], [10.0, 2.0, 0.0, 0.0])
  close(grads[6], [3.0, 3.0, 6.0, 1.0])
  close(grads[7], [3.0, 0.0, 0.0, 0.5])
  with pytest.warns(UserWarning, match='precision'):
    fp8.fp8_scaled_dot_general(
      X,
      K,
      DN,
      lax.Precision.HIGHEST,
      **dict(zip(fp8._SCALED_DOT_STATE, state)),
    )
  with pytest.raises(TypeError, match='missing: lhs_scale'):
    fp8.fp8_scaled_dot_general(X, K, DN)


def test_fm32_meta_dtype():
  fm32 = fp8_meta.fm32
  assert repr(fm32) == 'fp8_meta32' and fm32.name == 'fp8_meta32'
  assert fm32 == fp8_meta.fp32_max_grad
  assert fp8_meta.fp8_meta_dtype_wrapper(jnp.bfloat16).name == 'fp8_meta16'
  assert jax.dtypes.issubdtype(fm32, jax.dtypes.extended)
  meta = lax.convert_element_type(jnp.array([1.0, 2.0]), fm32)
  assert meta.dtype == fm32
  np.testing.assert_array_equal(
    lax.convert_element_type(meta, jnp.float32), [1.0, 2.0]
  )
  with pytest.raises(ValueError, match='Cannot convert'):
    lax.convert_element_type(jnp.array([1, 2]), fm32)
  # The rules: accumulation is max, its identity is -inf.
  rules = fp8_meta.Fp8MetaTyRules
  added = rules.add(fm32, jnp.array([1.0, 5.0]), jnp.array([3.0, 2.0]))
  np.testing.assert_array_equal(
    lax.convert_element_type(added, jnp.float32), [3.0, 5.0]
  )
  zero = lax.convert_element_type(rules.zero(fm32), jnp.float32)
  assert float(zero) == -np.inf
  assert rules.tangent_dtype(fm32) is fm32
  assert rules.convert_from(fm32, jnp.float32)
  assert not rules.convert_to(jnp.float16, fm32)
  # Under jit too, and the fm32 state goes through the updates.
  scale = jax.jit(lambda a: lax.convert_element_type(a, fm32))(S1)
  history = lax.convert_element_type(H1, fm32)
  qx, new_scale, new_history = fp8.quantize_dequantize_update(
    X, E4M3, scale, history, jnp.float32
  )
  assert new_scale.dtype == fm32 and new_history.dtype == fm32
  close(qx[0], [0.2857142984867096, -1.7142858505249023, 2.5714287757873535])
  close(lax.convert_element_type(new_history, jnp.float32), [10, 2, 0, 0])


def test_fm32_state_gradients_combine_by_max():
  def loss(scale, history):
    scale = lax.convert_element_type(scale, fp8_meta.fm32)
    history = lax.convert_element_type(history, fp8_meta.fm32)
    first = fp8.in_qdq(jnp.float32, E4M3, X, scale, history)
    second = fp8.in_qdq(jnp.float32, E4M3, X * 3, scale, history)
    return jnp.sum(first) + jnp.sum(second)

  d_scale, d_history = jax.jit(jax.grad(loss, argnums=(0, 1)))(S1, H1)
  close(d_scale, [4 / 448])
  # max(10, 30) in front, where float32 state would give 10 + 30.
  close(d_history, [30.0, 2.0, 0.0, 0.0])
