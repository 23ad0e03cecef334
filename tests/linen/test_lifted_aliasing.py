"""Lifted transforms given the same Module twice (argument, fields)."""

import jax
import jax.numpy as jnp
import pytest

from flax import linen as nn


class Dense(nn.Module):
  f: int = 2

  @nn.compact
  def __call__(self, x):
    k = self.param('kernel', jax.nn.initializers.ones, (x.shape[-1], self.f))
    return x @ k


class Foo(nn.Module):
  m1: nn.Module
  m2: nn.Module

  @nn.compact
  def __call__(self, x):
    return self.m2(self.m1(x))


TRANSFORMS = {
  'jit': nn.jit,
  'remat': nn.remat,
  'vmap': lambda c: nn.vmap(
    c, variable_axes={'params': None}, split_rngs={'params': False}
  ),
}


@pytest.mark.parametrize('name', sorted(TRANSFORMS))
def test_same_submodule_in_two_fields(name):
  class Bar(nn.Module):
    @nn.compact
    def __call__(self, x):
      dense = Dense(2)
      return TRANSFORMS[name](Foo)(dense, dense)(x)

  x = jnp.ones((2, 2))
  v = Bar().init(jax.random.key(0), x)
  assert jax.tree_util.tree_map(jnp.shape, v) == {
    'params': {'Dense_0': {'kernel': (2, 2)}}
  }
  assert Bar().apply(v, x).tolist() == [[4.0, 4.0], [4.0, 4.0]]


def test_same_submodule_as_argument_and_field():
  class Q(nn.Module):
    d: nn.Module

    @nn.compact
    def __call__(self, x):
      f = nn.jit(lambda m, other, x: m.d(x) + other(x))
      return f(self, self.d, x)

  class Top(nn.Module):
    @nn.compact
    def __call__(self, x):
      return Q(Dense(2))(x)

  x = jnp.ones((2, 2))
  v = Top().init(jax.random.key(0), x)
  assert jax.tree_util.tree_map(jnp.shape, v) == {
    'params': {'Dense_0': {'kernel': (2, 2)}}
  }
  assert Top().apply(v, x).tolist() == [[4.0, 4.0], [4.0, 4.0]]


@pytest.mark.parametrize('name', ['none', 'jit', 'remat'])
def test_aliased_mutation(name):
  class C(nn.Module):
    @nn.compact
    def __call__(self, x):
      initialized = self.has_variable('muts', 'v')
      v = self.variable('muts', 'v', lambda: jnp.zeros_like(x))
      if initialized:
        v.value += x
      return x

  class B(nn.Module):
    c: nn.Module

    @nn.compact
    def __call__(self, x):
      C(name='outer_c')(x)
      return self.c(x)

  class A(nn.Module):
    b: nn.Module

    @nn.compact
    def __call__(self, x):
      wrap = {'none': lambda f: f, 'jit': nn.jit, 'remat': nn.remat}[name]
      return wrap(lambda mdl, x: mdl.b(x))(self, x)

  a = A(b=B(c=C()))
  x = jnp.ones((1,))
  vs = a.init(jax.random.key(0), x)
  assert jax.tree_util.tree_map(lambda v: v.tolist(), vs) == {
    'muts': {'b': {'c': {'v': [0.0]}, 'outer_c': {'v': [0.0]}}}
  }
  _, new = a.apply(vs, x, mutable=['muts'])
  assert jax.tree_util.tree_map(lambda v: v.tolist(), new) == {
    'muts': {'b': {'c': {'v': [1.0]}, 'outer_c': {'v': [1.0]}}}
  }


def test_value_and_grad_over_adopted_submodules():
  class Bar(nn.Module):
    @nn.compact
    def __call__(self, x):
      k = self.param('k', lambda key, s: jnp.full(s, 2.0), (2, 2))
      return x @ k

  class Foo(nn.Module):
    bar: nn.Module
    qup: nn.Module

    @nn.compact
    def __call__(self, x):
      def fn(mdl, x):
        return jnp.sum((mdl.bar(x) - mdl.qup(x)) ** 2)

      return nn.value_and_grad(fn, self, x)

  x = jnp.ones((1, 2))
  f = Foo(Bar(), Dense(2))
  v = f.init(jax.random.key(0), x)
  value, grads = f.apply(v, x)
  assert float(value) == 8.0
  assert type(grads) is tuple
  assert jax.tree_util.tree_map(lambda a: a.tolist(), grads) == ([[8.0, 8.0]],)


def test_transformed_classes_live_in_flax_linen_transforms():
  def make():
    class D(nn.Module):
      def __call__(self, x):
        return x

    return D

  for transform, prefix in [
    (nn.jit, 'Jit'),
    (nn.vmap, 'Vmap'),
    (nn.remat, 'Checkpoint'),
    (nn.scan, 'Scan'),
    (nn.map_variables, 'Map_variables'),
    (nn.fold_rngs, 'Fold_rngs'),
  ]:
    cls = transform(make())
    assert (cls.__name__, cls.__qualname__, cls.__module__) == (
      f'{prefix}D',
      f'{prefix}D',
      'flax.linen.transforms',
    )
