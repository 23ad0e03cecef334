"""Submodules passed to several Modules are adopted once and shared."""

import jax
import jax.numpy as jnp
import pytest

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


def test_adopted_module_is_a_copy():
  a = D()

  class S(nn.Module):
    def setup(self):
      self.x = a
      self.y = [a]

    def __call__(self, x):
      assert self.x is not a and self.y[0] is self.x
      assert self.x.name == 'x' and self.x.parent is self
      return self.x(x)

  class U(nn.Module):
    sub: nn.Module

    @nn.compact
    def __call__(self, x):
      outer = B(a)
      assert outer.a is not a and outer.a is B(a).a
      return self.sub(x) + outer(x)

  assert shapes(S(), X) == {'params': {'x': KERNEL['D_0']}}
  assert shapes(U(a), X) == {
    'params': {
      'sub': KERNEL['D_0'],
      'B_0': {'D_0': KERNEL['D_0'], 'a': KERNEL['D_0']},
    }
  }
  # The user's Module stays unbound and unnamed.
  assert a.name is None and a.parent is None and a.scope is None


def test_pytree_of_submodules_named_in_key_order():
  class Counter(nn.Module):
    @nn.compact
    def __call__(self, x):
      count = self.variable('counter', 'i', jnp.zeros, ())
      count.value += 1
      return x

  class P(nn.Module):
    subs: dict

    @nn.compact
    def __call__(self, x):
      assert list(self.subs) == ['z', 'a']
      return sum(m(x) for m in self.subs.values())

  c = Counter()
  variables = P({'z': c, 'a': c}).init(jax.random.key(0), X)
  assert jax.tree_util.tree_map(float, variables) == {
    'counter': {'subs_a': {'i': 2.0}}
  }


def test_shared_scope_takes_bound_children_along():
  class Leaf(nn.Module):
    @nn.compact
    def __call__(self):
      return D(3)(jnp.ones((1, 2)))

  class Child(nn.Module):
    child: nn.Module

    def setup(self):
      self.inner = D(5)

    def __call__(self):
      return self.child().sum() + self.inner(jnp.ones((1, 2))).sum()

  class Parent(nn.Module):
    main_child: nn.Module
    reversed: bool = False

    def setup(self):
      if self.reversed:
        nn.share_scope(self.main_child, self)
      else:
        nn.share_scope(self, self.main_child)

    def __call__(self):
      return self.main_child()

  expected = {
    'params': {
      'child': {'D_0': {'kernel': (2, 3)}},
      'inner': {'kernel': (2, 5)},
    }
  }
  for reversed_ in (False, True):
    model = Parent(Child(Leaf()), reversed_)
    v = model.init(jax.random.key(0))
    assert jax.tree_util.tree_map(jnp.shape, v) == expected
    assert model.apply(v).shape == ()

  class Clash(nn.Module):
    main_child: nn.Module

    def setup(self):
      self.child = D(7)
      nn.share_scope(self, self.main_child)

    def __call__(self):
      return self.main_child()

  with pytest.raises(ValueError, match='Duplicate use of scope name: "child"'):
    Clash(Child(Leaf())).init(jax.random.key(0))
