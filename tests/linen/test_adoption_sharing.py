"""Submodules passed to several Modules are adopted once and shared."""

import jax
import jax.numpy as jnp

from flax import linen as nn


class D(nn.Module):
  f: int = 2

  @nn.compact
  def __call__(self, x):
    k = self.param('kernel', jax.nn.initializers.ones, (x.shape[-1], self.f))
    return x @ k


class A(nn.Module):
  @nn.compact
  def __call__(self, x):
    return D()(x)


class B(nn.Module):
  a: nn.Module

  @nn.compact
  def __call__(self, x):
    return D()(x) + self.a(x)


def shapes(module, *args):
  return jax.tree_util.tree_map(
    jnp.shape, module.init(jax.random.key(0), *args)
  )


KERNEL = {'D_0': {'kernel': (2, 2)}}
X = jnp.ones((2, 2))


def test_toplevel_submodule_shared_by_parent_and_child():
  class C(nn.Module):
    a: nn.Module
    b: nn.Module

    @nn.compact
    def __call__(self, x):
      return D()(x) + self.b(x) + self.a(x)

  a = A()
  assert shapes(C(a, B(a)), X) == {
    'params': {'D_0': KERNEL['D_0'], 'a': KERNEL, 'b': KERNEL}
  }

  class C3(nn.Module):
    b: nn.Module
    a: nn.Module

    @nn.compact
    def __call__(self, x):
      return self.b(x) + self.a(x)

  # The field adopted first owns the shared Module.
  assert shapes(C3(B(a), a), X) == {
    'params': {'b': {'D_0': KERNEL['D_0'], 'a': KERNEL}}
  }


def test_toplevel_pytree_of_submodules_shared():
  class E(nn.Module):
    subs: dict

    @nn.compact
    def __call__(self, x):
      return sum(m(x) for m in self.subs.values())

  class F(nn.Module):
    e: nn.Module
    subs: dict

    @nn.compact
    def __call__(self, x):
      return self.e(x) + sum(m(x) for m in self.subs.values())

  subs = {'x': A(), 'y': A()}
  assert shapes(F(E(subs), subs), X) == {
    'params': {'e': {'subs_x': KERNEL, 'subs_y': KERNEL}}
  }


def test_parentless_module_shared_inside_compact_and_setup():
  class K(nn.Module):
    @nn.compact
    def __call__(self, x):
      a = A(parent=None)
      return B(a)(x) + B(a)(x)

  assert shapes(K(), X) == {
    'params': {'B_0': {'D_0': KERNEL['D_0'], 'a': KERNEL}, 'B_1': KERNEL}
  }

  class K2(nn.Module):
    def setup(self):
      a = A(parent=None)
      self.b1 = B(a)
      self.b2 = B(a)

    def __call__(self, x):
      return self.b1(x) + self.b2(x)

  assert shapes(K2(), X) == {
    'params': {'b1': {'D_0': KERNEL['D_0'], 'a': KERNEL}, 'b2': KERNEL}
  }


def test_external_grandchild_scope():
  class GrandChild(nn.Module):
    @nn.compact
    def __call__(self):
      return D(5)(jnp.ones(10))

  class Child(nn.Module):
    child: nn.Module

    @nn.compact
    def __call__(self):
      return self.child()

  class Parent(nn.Module):
    main_child: nn.Module

    def __call__(self):
      return self.main_child()

  for grandchild in (GrandChild(parent=None), GrandChild()):
    model = Parent(main_child=Child(child=grandchild))
    v = model.init(jax.random.key(2))
    assert jax.tree_util.tree_map(jnp.shape, v) == {
      'params': {'main_child': {'child': {'D_0': {'kernel': (10, 5)}}}}
    }
    assert model.apply(v).shape == (5,)
