"""nnx.vmap: what is not mapped (axis spec None) leaves unbatched, as in
Flax 0.12.8 - a batched value there is JAX's ValueError, not a silent
first slice."""

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

MODES = [{}, {'graph_updates': False}, {'graph': False}]
BATCHED = 'got axis spec None but output was batched'


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3))
    self.c = nnx.BatchStat(jnp.zeros(3))
    self.n = nnx.data(4)


X = jnp.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize('kw', MODES)
def test_batched_value_into_a_broadcast_variable_raises(kw):
  m = Model()

  @nnx.vmap(in_axes=(None, 0), **kw)
  def f(m, x):
    m.c[...] = m.c[...] + x
    return m.w * x

  with pytest.raises(ValueError, match=BATCHED):
    f(m, X)
  np.testing.assert_array_equal(m.c[...], [0.0, 0.0, 0.0])

  # An unbatched update of a broadcast Variable is written back as is.
  @nnx.vmap(in_axes=(None, 0), **kw)
  def g(m, x):
    m.c[...] = m.c[...] + 1
    return m.w * x

  assert g(m, X).shape == (2, 3)
  np.testing.assert_array_equal(m.c[...], [1.0, 1.0, 1.0])


@pytest.mark.parametrize('kw', MODES)
def test_out_axes_none(kw):
  with pytest.raises(ValueError, match=BATCHED):
    nnx.vmap(lambda x: x * 2, out_axes=None, **kw)(X)
  y, three = nnx.vmap(
    lambda x, y: (x * 2, y), in_axes=(0, None), out_axes=(0, None), **kw
  )(X, 3)
  assert y.shape == (2, 3)
  assert three == 3 and type(three) is int


def test_unchanged_python_number_stays_a_number():
  m = Model()
  out, y = nnx.vmap(
    lambda m, x: (m, m.w * x), in_axes=(None, 0), out_axes=(None, 0)
  )(m, X)
  assert out is m and y.shape == (2, 3)
  assert type(m.n) is int and m.n == 4


def test_state_axes_in_and_out():
  m = Model()
  m.c = nnx.BatchStat(jnp.zeros((2, 3)))

  axes = nnx.StateAxes({nnx.BatchStat: 0, ...: None})

  @nnx.vmap(in_axes=(axes, 0), out_axes=axes)
  def step(m, x):
    m.c[...] = m.c[...] + x
    return m

  out = step(m, X)
  assert out.w[...].shape == (3,)
  np.testing.assert_array_equal(out.c[...], X)
  np.testing.assert_array_equal(m.c[...], X)


def test_error_names_the_place_of_the_batched_element():
  # Flax 0.12.8 names the output leaf, or the Variable of an argument.
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(3))

  @nnx.vmap(in_axes=(None, 0), out_axes=0)
  def scale(m, x):
    m.w[...] = m.w[...] * x
    return x

  with pytest.raises(
    ValueError,
    match=r"^at vmap out_axes\[0\]\[0\]\.states\[0\]\['w'\]\.value, " + BATCHED,
  ):
    scale(M(), jnp.ones(4))
  with pytest.raises(
    ValueError, match=r'^at vmap out_axes\[0\]\[0\], ' + BATCHED
  ):
    nnx.vmap(lambda x: x, in_axes=0, out_axes=None)(jnp.ones(4))
