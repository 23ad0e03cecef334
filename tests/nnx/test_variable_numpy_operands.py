"""NumPy operands of a Variable's operators: NumPy scalars and arrays defer
to a Variable holding a JAX array (its ``__array_priority__``), so the
result is a JAX array, eagerly and under jax.jit / jax.vmap; the operators
call the value's own methods (as Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx


@pytest.fixture(params=[False, True], ids=['plain', 'hijax'])
def hijax(request):
  return request.param


def _result(x):
  return type(x).__name__, str(x.dtype)


def test_numpy_scalar_times_variable_is_a_jax_array(hijax):
  p = nnx.Param(jnp.arange(3.0), hijax=hijax)
  out = np.log(2.0) * p
  assert _result(out) == ('ArrayImpl', 'float32')
  np.testing.assert_allclose(out, [0.0, 0.6931472, 1.3862944], rtol=1e-6)
  for out in (
    np.float32(2) + p,
    np.int32(2) - p,
    np.float64(2) ** p,
    np.ones(3) + p,
    np.ones(3, np.float32) * p,
    p * np.log(2.0),
    p + np.ones(3),
  ):
    assert _result(out) == ('ArrayImpl', 'float32')
  assert _result(np.ones(3) @ p) == ('ArrayImpl', 'float32')
  if not hijax:  # a hijax Variable compares by identity
    assert _result(np.ones(3) == p) == ('ArrayImpl', 'bool')


def test_under_jit_vmap_and_grad():
  p = nnx.Param(jnp.arange(3.0))
  out = jax.jit(lambda p: np.log(2.0) * p)(p)
  np.testing.assert_allclose(out, [0.0, 0.6931472, 1.3862944], rtol=1e-6)
  out = jax.jit(lambda p: np.ones(3) + p)(p)
  np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
  out = jax.vmap(lambda p: np.float32(3) * p)(p)
  np.testing.assert_array_equal(out, [0.0, 3.0, 6.0])
  g = jax.grad(lambda p: (np.float32(3) * p).sum())(p)
  assert type(g) is nnx.Param
  np.testing.assert_array_equal(g[...], [3.0, 3.0, 3.0])
  h = nnx.Param(jnp.arange(3.0), hijax=True)
  out = jax.jit(lambda h: np.float64(2) * h)(h)
  np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])


def test_numpy_protocols_come_from_the_value():
  v = nnx.Param(jnp.ones(2))
  assert v.__array_priority__ == 100
  assert np.asarray(v).dtype == np.float32
  assert np.asarray(nnx.Param(jnp.ones(2), ref=True)).dtype == np.float32
  # a NumPy ufunc called directly still converts through ``__array__``
  assert type(np.add(np.ones(2), v)).__name__ == 'ndarray'
  # a value without NumPy protocols: the Variable is an object
  assert not hasattr(nnx.Variable(3.0), '__array_priority__')
  assert np.asarray(nnx.Variable(3.0)).dtype == object
  assert np.asarray(nnx.Variable([1, 2])).tolist() == [1, 2]
  with pytest.raises(jax.errors.TracerArrayConversionError):
    jax.jit(lambda v: np.asarray(v))(v)


def test_operators_call_the_value_methods():
  V = nnx.Variable
  assert V(2.0) * V(3) == 6.0
  for fn in (
    lambda: 2.0 * V(3),
    lambda: V(3) * 2.0,
    lambda: V(3) * V(2.0),
    lambda: V(2.0) + 1j,
    lambda: V(jnp.ones(2)) + None,
    lambda: V(3) * np.float32(2),
  ):
    with pytest.raises(TypeError, match='unsupported operand'):
      fn()
  with pytest.raises(AttributeError, match="'int' object has no attribute"):
    V(2) @ V(3)
  assert (V(2) == 2.0) is False and (V(2) != 2.0) is True
  assert (V(2.0) == V(2)) is True
  assert np.float32(2) * V(3.0) == 6.0
  assert type(np.float32(2) * V(3.0)) is float


def test_round_complex_and_missing_operators(hijax):
  p = nnx.Param(jnp.array(1.5), hijax=hijax)
  assert _result(round(p)) == ('ArrayImpl', 'float32')
  assert float(round(p)) == 2.0
  assert round(nnx.Variable(2.5)) == 2.0
  assert round(nnx.Variable(2.567), 2) == 2.57
  assert complex(p) == 1.5 + 0j
  q = nnx.Param(jnp.arange(3.0), hijax=hijax)
  for fn in (lambda: q < 1, lambda: 1 < q, lambda: q >= 1):
    with pytest.raises(TypeError, match='not supported between'):
      fn()
  if hijax:
    quotient, remainder = divmod(q, 2)
    np.testing.assert_array_equal(quotient, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(remainder, [0.0, 1.0, 0.0])
    q2, _ = jax.jit(lambda q: divmod(2, q))(q)
    np.testing.assert_array_equal(q2, [np.inf, 2.0, 1.0])
  else:
    with pytest.raises(TypeError, match='divmod'):
      divmod(q, 2)


@pytest.mark.parametrize(
  'op', ['+', '-', '*', '/', '//', '%', '**', '@', '<<', '>>', '&', '|', '^']
)
def test_inplace_operators_are_refused(op, hijax):
  v = nnx.Param(jnp.array([1, 2, 3]), hijax=hijax)
  with pytest.raises(NotImplementedError) as info:
    exec(f'v {op}= 1', {'v': v})
  assert str(info.value) == (
    'In-place operations are no longer supported for Variable.\n'
    f'Use `variable[...] {op}= x` instead.'
  )


def test_missing_attribute_is_the_value_error():
  with pytest.raises(AttributeError) as info:
    nnx.Param(jnp.ones(1)).zzz
  assert str(info.value) == (
    "'jaxlib._jax.ArrayImpl' object has no attribute 'zzz'"
  )
