"""Values of data attributes that are not arrays (``nnx.data(4)``) are
leaves of the state in graph mode; without graph updates ``nnx.jit``
gives new values to Variables only."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.arr = jnp.zeros(2)
    self.d = nnx.data(4)
    self.f = nnx.data(2.5)
    self.none = nnx.data(None)
    self.pair = nnx.data((1, 2))
    self.name = 'static'


def test_numbers_of_data_attributes_are_state_leaves():
  m = M()
  graphdef, state = nnx.split(m)
  flat = dict(nnx.to_flat_state(state))
  assert set(flat) == {('arr',), ('d',), ('f',), ('w',)}
  assert flat[('d',)] == 4 and flat[('f',)] == 2.5
  m2 = nnx.merge(graphdef, state)
  assert (m2.d, m2.f, m2.pair, m2.name) == (4, 2.5, (1, 2), 'static')
  nnx.update(m2, nnx.State({'d': 7}))
  assert m2.d == 7
  assert list(nnx.state(m, nnx.Param)) == ['w']


def test_jit_traces_them_and_writes_them_back(jit_path):
  m = M()
  seen = []

  @nnx.jit
  def f(m):
    seen.append(type(m.d))
    m.d = m.d + 1
    return m.w[...] * m.f

  np.testing.assert_array_equal(f(m), np.full(2, 2.5))
  assert issubclass(seen[0], jax.core.Tracer)
  # they come back as arrays, changed or not (as every value leaving jit)
  assert isinstance(m.d, jax.Array) and int(m.d) == 5
  assert isinstance(m.f, jax.Array) and float(m.f) == 2.5
  assert m.pair == (1, 2) and m.none is None


@pytest.mark.parametrize('graph', [True, False])
def test_jit_without_graph_updates_updates_variables_only(graph, jit_path):
  m = M()

  @nnx.jit(graph=graph, graph_updates=False)
  def f(m):
    m.arr = m.arr + 1
    m.w[...] += 1
    return m.w[...].sum()

  assert float(f(m)) == 4.0
  np.testing.assert_array_equal(m.w[...], np.full(2, 2.0))
  np.testing.assert_array_equal(m.arr, np.zeros(2))
  assert type(m.d) is int and type(m.f) is float


def test_graph_updates_bring_plain_arrays_back(jit_path):
  m = M()

  @nnx.jit
  def f(m):
    m.arr = m.arr + 1

  f(m)
  np.testing.assert_array_equal(m.arr, np.ones(2))


def test_registering_a_plain_type_as_data():
  # (in a fresh interpreter: the registration is global)
  code = '\n'.join(
    [
      'from flax import nnx',
      'class M(nnx.Module):',
      '  def __init__(self):',
      '    self.x = 3.5',
      '    self.n = 2',
      'nnx.register_data_type(float)',
      'print(sorted(nnx.state(M()).keys()))',
    ]
  )
  out = subprocess.run(
    [sys.executable, '-c', code], capture_output=True, text=True, check=True
  )
  assert out.stdout.strip() == "['x']"
