"""``Variable.value`` and ``Variable.raw_value`` are deprecated (Flax
0.12.8): reading or writing them warns, their replacements do not, and
every read and write goes through ``get_value`` / ``set_value``."""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx

GET = "'.value' access is now deprecated"
SET = "'.value' setter is now deprecated"
RAW_GET = "'.raw_value' access is now deprecated"
RAW_SET = "'.raw_value' setter is now deprecated"


def _caught(fn):
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    result = fn()
  return result, caught


def _only(caught, phrase):
  assert len(caught) == 1, [str(w.message) for w in caught]
  (w,) = caught
  assert w.category is DeprecationWarning
  assert str(w.message).startswith(phrase)
  return w


def test_value_read_warns_at_the_callers_line():
  v = nnx.Param(jnp.ones(3))
  value, caught = _caught(lambda: v.value)
  w = _only(caught, GET)
  assert value.tolist() == [1.0, 1.0, 1.0]
  assert str(w.message) == (
    "'.value' access is now deprecated. For Variable[Array] instances use:"
    '\n\n  variable[...]\n\nFor other Variable types use:\n\n'
    '  variable.get_value()\n'
  )
  assert w.filename == __file__


def test_value_write_warns_from_the_library():
  v = nnx.Param(jnp.ones(3))

  def write():
    v.value = jnp.zeros(3)

  _, caught = _caught(write)
  w = _only(caught, SET)
  assert 'variable[...] = value' in str(w.message)
  assert 'variable.set_value(value)' in str(w.message)
  # As in Flax 0.12.8, the warning points into flax.nnx.variablelib, so the
  # default filters (which show DeprecationWarnings of __main__) hide it.
  assert os.path.basename(w.filename) == 'variablelib.py'
  assert v[...].tolist() == [0.0, 0.0, 0.0]


def test_raw_value_read_and_write_warn():
  v = nnx.Param(jnp.ones(2))
  raw, caught = _caught(lambda: v.raw_value)
  w = _only(caught, RAW_GET)
  assert 'variable.get_raw_value()' in str(w.message)
  assert w.filename == __file__
  assert raw.tolist() == [1.0, 1.0]

  def write():
    v.raw_value = jnp.full(2, 5.0)

  _, caught = _caught(write)
  w = _only(caught, RAW_SET)
  assert 'variable.set_raw_value(value)' in str(w.message)
  assert v.get_raw_value().tolist() == [5.0, 5.0]


def test_getattr_and_setattr_warn_too():
  v = nnx.Param(jnp.ones(2))
  _only(_caught(lambda: getattr(v, 'value'))[1], GET)
  _only(_caught(lambda: hasattr(v, 'value'))[1], GET)
  _only(_caught(lambda: setattr(v, 'value', jnp.zeros(2)))[1], SET)
  _only(_caught(lambda: setattr(v, 'raw_value', jnp.zeros(2)))[1], RAW_SET)


@pytest.mark.parametrize(
  'make',
  [
    lambda: nnx.Variable(3),
    lambda: nnx.Variable([1, 2]),
    lambda: nnx.Cache(jnp.zeros(2)),
    lambda: nnx.Intermediate((jnp.ones(1),)),
    lambda: nnx.Rngs(0).params.key,
    lambda: nnx.Rngs(0).params.count,
  ],
  ids=['int', 'list', 'cache', 'intermediate', 'rng-key', 'rng-count'],
)
def test_every_variable_type_warns(make):
  v = make()
  value, caught = _caught(lambda: v.value)
  _only(caught, GET)
  assert value is v.get_value() or np.array_equal(value, v.get_value())


def test_state_leaves_are_variables_and_warn():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))

  state = nnx.state(M())
  _only(_caught(lambda: state['w'].value)[1], GET)
  _only(_caught(lambda: state['w'].raw_value)[1], RAW_GET)


def test_reading_inside_jit_warns_once_at_trace_time():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))

  @nnx.jit
  def f(m):
    return m.w.value * 2

  m = M()
  out, caught = _caught(lambda: f(m))
  w = _only(caught, GET)
  assert w.filename == __file__
  assert out.tolist() == [2.0, 2.0]
  assert _caught(lambda: f(m))[1] == []  # cached: no new trace


def test_replacements_do_not_warn():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))
      self.n = nnx.BatchStat(jnp.zeros((), jnp.int32))

    def __call__(self, x):
      self.n[...] += 1
      return x * self.w

  def use():
    v = nnx.Param(jnp.arange(3.0))
    v.get_value()
    v[...]
    v[1]
    v.set_value(jnp.ones(3))
    v[...] = jnp.zeros(3)
    v[0] = 2.0
    v.get_raw_value()
    v.set_raw_value(jnp.ones(3))
    repr(v)
    jnp.asarray(v)
    np.asarray(v)
    v + 1, 2 * v, -v, v == v, len(v), v.shape, v.dtype, v.sum()
    m = M()
    m(jnp.ones(2))
    graphdef, state = nnx.split(m)
    nnx.merge(graphdef, state)
    nnx.update(m, nnx.state(m))
    nnx.clone(m)
    jax.tree.map(lambda x: x, state)
    nnx.to_pure_dict(state)
    nnx.jit(lambda m, x: m(x))(m, jnp.ones(2))
    rngs = nnx.Rngs(0)
    rngs.params(), rngs(), rngs.params.key[...]
    nnx.Variable.value  # the class attribute (a property)

  assert _caught(use)[1] == []


class Scaled(nnx.Variable):
  """Reads are ten times the stored value; writes store ``x + 1``."""

  def get_value(self, **kwargs):
    return super().get_value(**kwargs) * 10

  def set_value(self, value, **kwargs):
    return super().set_value(value + 1, **kwargs)


def test_reads_and_writes_go_through_get_value_and_set_value():
  v = Scaled(jnp.ones(2))
  assert v[...].tolist() == [10.0, 10.0]
  assert (v + 1).tolist() == [11.0, 11.0]
  assert jnp.asarray(v).tolist() == [10.0, 10.0]
  assert 'Array([10., 10.]' in repr(v)
  with pytest.warns(DeprecationWarning, match=GET):
    assert v.value.tolist() == [10.0, 10.0]
  v[0] = 5.0  # set_value(5.0, index=0) stores raw[0] = 6
  assert v.get_raw_value().tolist() == [6.0, 1.0]
  v[...] = jnp.zeros(2)
  assert v.get_raw_value().tolist() == [1.0, 1.0]


def test_setitem_writes_into_the_array():
  v = nnx.Param(jnp.ones(2))
  v[...] = jnp.array([1, 2])  # cast to the Variable's dtype
  assert v.get_raw_value().dtype == jnp.float32
  v[...] = np.zeros(2)
  assert isinstance(v.get_raw_value(), jax.Array)
  v[...] = 3.0  # broadcast
  assert v[...].tolist() == [3.0, 3.0]
  with pytest.raises(ValueError, match='broadcast'):
    v[...] = jnp.ones(3)
  n = nnx.Variable(np.ones(2))
  n[0] = 7  # in place
  assert n.get_raw_value().tolist() == [7.0, 1.0]
  s = nnx.Variable(jax.ShapeDtypeStruct((2,), jnp.float32))
  with pytest.raises(TypeError, match='does not support item assignment'):
    s[...] = jnp.zeros(2)
