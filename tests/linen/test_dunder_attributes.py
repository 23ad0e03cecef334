"""Dunder attributes of Linen Modules are never frozen (libraries swap a
bound Module's ``__class__``); inside ``setup`` they register as usual."""

import jax
import jax.numpy as jnp
import pytest
from flax import errors
from flax import linen as nn
from linen_test_layers import Dense


class A(nn.Module):
  @nn.compact
  def __call__(self, x):
    return Dense(2)(x)


class B(A):
  @nn.compact
  def __call__(self, x):
    return Dense(3)(x)


def test_class_swap_on_unbound_and_bound_modules():
  a = A()
  a.__class__ = B
  assert type(a) is B
  variables = a.init(jax.random.key(0), jnp.ones(2))
  assert variables['params']['Dense_0']['kernel'].shape == (2, 3)
  bound = A().bind(A().init(jax.random.key(0), jnp.ones(2)))
  bound.__class__ = B
  assert type(bound) is B
  bound.__extra__ = 1
  assert bound.__extra__ == 1


def test_ordinary_attributes_stay_frozen():
  bound = A().bind(A().init(jax.random.key(0), jnp.ones(2)))
  with pytest.raises(errors.SetAttributeFrozenModuleError):
    bound.x = 1
  with pytest.raises(TypeError, match="can't delete __class__"):
    del A().__class__


def test_dunder_submodule_in_setup():
  class Q(nn.Module):
    def setup(self):
      self.__bar__ = Dense(2)

    def __call__(self, x):
      return self.__bar__(x)

  variables = Q().init(jax.random.key(0), jnp.ones(2))
  assert jax.tree.map(jnp.shape, variables) == {
    'params': {'__bar__': {'bias': (2,), 'kernel': (2, 2)}}
  }
