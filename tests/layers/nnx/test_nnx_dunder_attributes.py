"""Attributes Python gives meaning to (``__class__``, properties with
setters) on NNX objects, whose ``__setattr__`` tracks data attributes."""

import jax.numpy as jnp
import pytest
from flax import nnx


class Base(nnx.Module):
  def __init__(self):
    self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

  def __call__(self, x):
    return 'base'


class Other(Base):
  def __call__(self, x):
    return 'other'


def test_assigning_class_changes_the_type():
  m = Base()
  m.__class__ = Other
  assert type(m) is Other
  assert m(1) == 'other'
  assert '__class__' not in vars(m)


def test_wrapper_class_made_on_the_fly_runs_under_jit_and_split():
  m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
  orig = type(m)
  calls = []

  def wrapped(self, x):
    calls.append(x.shape)
    return orig.__call__(self, x) * 0

  m.__class__ = type('WrappedLinear', (orig,), {'__call__': wrapped})
  assert m(jnp.ones((1, 2))).tolist() == [[0.0, 0.0, 0.0]]
  assert type(nnx.merge(*nnx.split(m))).__name__ == 'WrappedLinear'
  y = nnx.jit(lambda m, x: m(x))(m, jnp.ones((1, 2)))
  assert y.tolist() == [[0.0, 0.0, 0.0]]
  assert calls == [(1, 2), (1, 2)]
  assert repr(m).startswith('WrappedLinear(')


def test_property_setter_runs():
  class P(nnx.Module):
    def __init__(self):
      self._w = nnx.Param(jnp.ones(2))

    @property
    def w(self):
      return self._w[...]

    @w.setter
    def w(self, v):
      self._w[...] = v * 2

  p = P()
  p.w = jnp.full(2, 3.0)
  assert p._w[...].tolist() == [6.0, 6.0]
  assert 'w' not in vars(p)
  assert [str(path[0]) for path, _ in nnx.to_flat_state(nnx.state(p))] == ['_w']


def test_property_added_to_class_later_is_seen():
  class Q(nnx.Module):
    def __init__(self):
      self.log = []

  q = Q()
  Q.v = property(lambda self: 1, lambda self, val: self.log.append(val))
  q.v = 5
  assert q.log == [5]
  assert 'v' not in vars(q)


def test_variable_and_list_class_assignment():
  v = nnx.Param(jnp.ones(1))
  v.__class__ = nnx.BatchStat
  assert type(v) is nnx.BatchStat
  assert '__class__' not in v.get_metadata()

  class Sub(nnx.List):
    pass

  lst = nnx.List([1, 2])
  lst.__class__ = Sub
  assert type(lst) is Sub and list(lst) == [1, 2]


def test_deleting_class_is_a_type_error():
  with pytest.raises(TypeError, match="can't delete __class__ attribute"):
    del Base().__class__
  with pytest.raises(AttributeError):
    del Base().missing


def test_state_keeps_attribute_assignment_as_a_key():
  s = nnx.state(Base())
  s.__class__ = type(s)
  assert sorted(s.keys()) == ['__class__', 'lin']
