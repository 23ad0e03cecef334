"""Modules as dataclasses: fields, kw_only, hashing, repr, clone."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import pytest

from flax import errors
from flax import linen as nn


class Affine(nn.Module):
  features: int
  use_bias: bool = True
  kernel_init: object = jax.nn.initializers.lecun_normal()
  dtype: object = jnp.float32

  @nn.compact
  def __call__(self, x):
    k = self.param('kernel', self.kernel_init, (x.shape[-1], self.features))
    y = x @ k
    if self.use_bias:
      b = self.param('bias', jax.nn.initializers.zeros, (self.features,))
      y = y + jnp.broadcast_to(b, y.shape)
    return y


def test_fields_end_with_parent_and_name():
  names = [f.name for f in dataclasses.fields(Affine)]
  assert names == [
    'features',
    'use_bias',
    'kernel_init',
    'dtype',
    'parent',
    'name',
  ]


def test_subclass_keeps_parent_and_name_last():
  class Child(Affine):
    extra: int = 3

  names = [f.name for f in dataclasses.fields(Child)]
  assert names[-2:] == ['parent', 'name']
  assert names[:-2] == ['features', 'use_bias', 'kernel_init', 'dtype', 'extra']


def test_parent_and_name_are_not_positional():
  class P(nn.Module):
    a: int
    b: int

  with pytest.raises(TypeError, match='takes 3 positional arguments but 5'):
    P(1, 2, None, 'nm')
  m = P(1, 2, parent=None, name='nm')
  assert (m.a, m.b, m.name, m.parent) == (1, 2, 'nm', None)


def test_kw_only_is_not_inherited():
  class Base(nn.Module, kw_only=True):
    base_multiplier: int = -1

  class Child(Base):
    child_multiplier: int

  with pytest.raises(TypeError):
    Base(2)
  child = Child(2)
  assert child.child_multiplier == 2
  assert child.base_multiplier == -1
  assert Child(3, base_multiplier=4).base_multiplier == 4


def test_hash_and_equality_by_fields():
  assert Affine(3) == Affine(3)
  assert Affine(3) != Affine(4)
  assert hash(Affine(3)) == hash(Affine(3))
  # Usable as a static argument of jax.jit.
  calls = []

  @functools.partial(jax.jit, static_argnums=0)
  def f(module, x):
    calls.append(1)
    return module.features * x

  f(Affine(2), 1.0)
  f(Affine(2), 2.0)
  assert len(calls) == 1
  assert f(Affine(3), 1.0) == 3.0


def test_bound_apply_is_a_jit_static_argument():
  m = Affine(2)
  v = m.init(jax.random.key(0), jnp.ones((1, 2)))

  @functools.partial(jax.jit, static_argnums=0)
  def f(apply_fn, v, x):
    return apply_fn(v, x)

  y = f(m.apply, v, jnp.ones((1, 2)))
  assert y.shape == (1, 2)


def test_repr():
  assert repr(Affine(3)) == (
    'Affine(\n'
    '    # attributes\n'
    '    features = 3\n'
    '    use_bias = True\n'
    '    kernel_init = init\n'
    '    dtype = float32\n'
    ')'
  )

  class Empty(nn.Module):
    pass

  assert repr(Empty()) == 'Empty()'


def test_repr_shows_setup_children_of_bound_module():
  class Outer(nn.Module):
    def setup(self):
      self.inner = Affine(2)

    def __call__(self, x):
      return self.inner(x)

  v = Outer().init(jax.random.key(0), jnp.ones((1, 2)))
  bound = Outer().bind(v)
  bound.inner  # runs setup
  text = repr(bound)
  assert text.startswith('Outer(\n    # children\n    inner = Affine(\n')
  assert '        features = 2\n' in text


def test_reserved_field_names():
  with pytest.raises(errors.ReservedModuleAttributeError):

    class Bad(nn.Module):
      name: str


def test_multiple_compact_methods_share_autonaming():
  # Allowed (as in Flax 0.12.8): the names count on while one compact call
  # runs inside another, and start again for each outermost call.
  class Twice(nn.Module):
    @nn.compact
    def f(self, x):
      return Affine(3)(x)

    @nn.compact
    def __call__(self, x):
      return self.f(self.f(x))

  v = Twice().init(jax.random.key(0), jnp.ones((1, 3)))
  assert sorted(v['params']) == ['Affine_0', 'Affine_1']

  class AE(nn.Module):
    @nn.compact
    def encode(self, x):
      return Affine(2)(x)

    @nn.compact
    def decode(self, z):
      return Affine(3)(z)

    def __call__(self, x):
      return self.decode(self.encode(x))

  # encode and decode each start at Affine_0: the same submodule, so the
  # second call finds a parameter of another shape
  with pytest.raises(errors.ScopeParamShapeError, match='"/Affine_0"'):
    AE().init(jax.random.key(0), jnp.ones((1, 3)))


def test_clone_updates_fields_and_unbinds():
  m = Affine(3, name='foo')
  c = m.clone(features=5)
  assert c.features == 5 and c.name == 'foo' and c.parent is None
  assert m.features == 3


def test_nowrap_method_runs_unbound():
  class M(nn.Module):
    features: int

    @nn.nowrap
    def doubled(self):
      return 2 * self.features

    def setup(self):
      self.dense = Affine(self.doubled())

    def __call__(self, x):
      return self.dense(x)

  assert M(2).doubled() == 4
  v = M(2).init(jax.random.key(0), jnp.ones((1, 3)))
  assert v['params']['dense']['kernel'].shape == (3, 4)


def test_unannotated_attributes_are_class_statics():
  class M(nn.Module):
    scale = 3.0
    features: int = 1

    def __call__(self, x):
      return self.scale * x

  assert [f.name for f in dataclasses.fields(M)] == [
    'features',
    'parent',
    'name',
  ]
  assert M().apply({}, 2.0) == 6.0


def test_setup_not_run_on_unbound_module():
  class TopLevelAccess(nn.Module):
    def setup(self):
      self.foo = 1

    def __call__(self):
      return self.foo

  assert not hasattr(TopLevelAccess(), 'foo')
  assert TopLevelAccess().apply({}) == 1


def test_unbound_setup_attribute_message():
  class ExplicitMLP(nn.Module):
    def setup(self):
      self.layers = [Affine(2)]

    def __call__(self, x):
      return self.layers[0](x)

  with pytest.raises(AttributeError) as info:
    ExplicitMLP().layers
  assert str(info.value) == (
    '"ExplicitMLP" object has no attribute "layers". If "layers" is '
    "defined in '.setup()', remember these fields are only accessible "
    "from inside 'init' or 'apply'."
  )


def test_plain_jax_vmap_over_module_fails():
  m = Affine(2)
  with pytest.raises(TypeError):
    jax.vmap(lambda mdl, x: mdl(x))(m, jnp.ones((3, 2)))
