"""Linen Modules and Module classes survive (cloud)pickling."""

import dataclasses
import inspect
import pickle

import cloudpickle
import jax
import jax.numpy as jnp

from flax import linen as nn


class Scale(nn.Module):
  features: int = 2

  @nn.compact
  def __call__(self, x):
    return x * self.param('w', jax.nn.initializers.ones, (self.features,))


def make_class():
  class Local(nn.Module):
    a: int = 1

    def setup(self):
      self.s = Scale(2)

    def __call__(self, x):
      return self.s(x)

    @property
    def doubled(self):
      return 2 * self.a

  return Local


def test_pickle_module_instance():
  m = pickle.loads(pickle.dumps(Scale(3, name='x')))
  assert (m.features, m.name, m.parent) == (3, 'x', None)
  v = m.init(jax.random.key(0), jnp.ones(3))
  assert v['params']['w'].tolist() == [1.0, 1.0, 1.0]


def test_cloudpickle_class_by_value():
  cls = cloudpickle.loads(cloudpickle.dumps(make_class()))
  assert [f.name for f in dataclasses.fields(cls)] == ['a', 'parent', 'name']
  assert list(inspect.signature(cls).parameters) == ['a', 'parent', 'name']
  m = cls(4)
  assert (m.a, m.doubled) == (4, 8)
  v = m.init(jax.random.key(0), jnp.ones(2))
  assert jax.tree_util.tree_map(jnp.shape, v) == {'params': {'s': {'w': (2,)}}}


def test_cloudpickle_instances_and_transformed_classes():
  m = cloudpickle.loads(cloudpickle.dumps(make_class()(5)))
  assert m.a == 5
  jitted = cloudpickle.loads(cloudpickle.dumps(nn.jit(make_class())))
  assert type(jitted(2)).__name__ == 'JitLocal'

  class Outer(nn.Module):
    inner: nn.Module

    def __call__(self, x):
      return self.inner(x)

  o = pickle.loads(cloudpickle.dumps(Outer(Scale(3, name='x'))))
  v = o.init(jax.random.key(0), jnp.ones(3))
  assert jax.tree_util.tree_map(jnp.shape, v) == {
    'params': {'inner': {'w': (3,)}}
  }
