"""Submodule naming: per-class counters, setup attributes, adoption."""

import flax
import jax
import jax.numpy as jnp
import pytest

from flax import errors
from flax import linen as nn


class Lin(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    b = self.param('bias', jax.nn.initializers.zeros, (self.features,))
    return x @ k + jnp.broadcast_to(b, x.shape[:-1] + b.shape)


class Other(nn.Module):
  @nn.compact
  def __call__(self, x):
    b = self.param('b', jax.nn.initializers.zeros, x.shape[-1:])
    return x + jnp.broadcast_to(b, x.shape)


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def init(module, *args, **kwargs):
  return module.init(jax.random.key(0), *args, **kwargs)


def test_per_class_counters_in_compact():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      x = Lin(4)(x)
      x = Other()(x)
      x = Lin(3)(x)
      return Other()(x)

  params = init(M(), jnp.ones((1, 2)))['params']
  assert sorted(params) == ['Lin_0', 'Lin_1', 'Other_0', 'Other_1']
  assert params['Lin_1']['kernel'].shape == (4, 3)


def test_names_restart_on_every_call():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      return Lin(2)(x)

  m = M()
  v = init(m, jnp.ones((1, 2)))
  # apply twice in one call: names are stable across calls.
  y = m.apply(v, jnp.ones((1, 2)))
  assert y.shape == (1, 2)


def test_setup_attribute_names_and_containers():
  class M(nn.Module):
    def setup(self):
      self.encoder = Lin(3)
      self.layers = [Lin(2), Lin(2)]
      self.heads = {'a': Other(), 'b': Other()}

    def __call__(self, x):
      x = self.encoder(x)
      for layer in self.layers:
        x = layer(x)
      return self.heads['a'](x) + self.heads['b'](x)

  params = init(M(), jnp.ones((1, 4)))['params']
  assert sorted(params) == [
    'encoder',
    'heads_a',
    'heads_b',
    'layers_0',
    'layers_1',
  ]
  assert params['encoder']['kernel'].shape == (4, 3)


def test_setup_lists_become_tuples():
  class M(nn.Module):
    def setup(self):
      self.layers = [Lin(2)]

    def __call__(self, x):
      assert isinstance(self.layers, tuple)
      return self.layers[0](x)

  init(M(), jnp.ones((1, 2)))


def test_explicit_names():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      x = Lin(3, name='first')(x)
      return Lin(2, name='second')(x)

  assert sorted(init(M(), jnp.ones((1, 2)))['params']) == ['first', 'second']


def test_module_field_is_adopted_under_field_name():
  class Head(nn.Module):
    backbone: nn.Module

    @nn.compact
    def __call__(self, x):
      return Lin(1)(self.backbone(x))

  model = Head(backbone=Lin(5))
  params = init(model, jnp.ones((1, 2)))['params']
  assert sorted(params) == ['Lin_0', 'backbone']
  assert params['backbone']['kernel'].shape == (2, 5)
  # The user's instance is left untouched.
  assert model.backbone.parent is None and model.backbone.name is None


def test_adopted_module_takes_field_name_unless_preserved():
  class Head(nn.Module):
    backbone: nn.Module

    def __call__(self, x):
      return self.backbone(x)

  # By default the field name wins (flax_preserve_adopted_names=False).
  params = init(Head(Lin(5, name='trunk')), jnp.ones((1, 2)))['params']
  assert list(params) == ['backbone']
  with flax.config.temp_flip_flag('preserve_adopted_names', True):
    params = init(Head(Lin(5, name='trunk')), jnp.ones((1, 2)))['params']
  assert list(params) == ['trunk']


def test_shared_module_in_field_is_adopted_once():
  class Twice(nn.Module):
    layers: tuple

    def __call__(self, x):
      for layer in self.layers:
        x = layer(x)
      return x

  shared = Lin(2)
  params = init(Twice((shared, shared)), jnp.ones((1, 2)))['params']
  assert list(params) == ['layers_0']


def test_inline_module_belongs_to_enclosing_compact_scope():
  class Wrapper(nn.Module):
    inner: nn.Module

    def __call__(self, x):
      return self.inner(x)

  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      return Wrapper(Lin(3))(x)

  params = init(M(), jnp.ones((1, 2)))['params']
  # Lin_0 was created (and named) in M's compact method.
  assert sorted(params) == ['Lin_0']


def test_parent_none_is_detached():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      detached = Lin(2, parent=None)
      v = detached.init(jax.random.key(1), x)
      y = detached.apply(v, x)
      return Lin(2)(y)

  params = init(M(), jnp.ones((1, 2)))['params']
  assert list(params) == ['Lin_0']


def test_name_in_use_submodule_vs_param():
  class Foo(nn.Module):
    @nn.compact
    def __call__(self, x):
      self.param('bar', jax.nn.initializers.zeros, (1,))
      return Lin(2, name='bar')(x)

  with pytest.raises(errors.NameInUseError) as info:
    init(Foo(), jnp.ones((1, 3)))
  assert 'Could not create submodule "bar" in Module Foo: Name in use.' in (
    str(info.value)
  )


def test_duplicate_param_name():
  class Foo(nn.Module):
    @nn.compact
    def __call__(self, x):
      self.param('w', jax.nn.initializers.zeros, (1,))
      self.param('w', jax.nn.initializers.zeros, (1,))
      return x

  with pytest.raises(errors.NameInUseError, match='param "w"'):
    init(Foo(), jnp.ones(1))


def test_duplicate_submodule_names():
  class Foo(nn.Module):
    @nn.compact
    def __call__(self, x):
      Lin(2, name='a')(x)
      return Lin(2, name='a')(x)

  with pytest.raises(errors.NameInUseError, match='submodule "a"'):
    init(Foo(), jnp.ones((1, 2)))


def test_same_variable_name_in_other_collection_is_allowed():
  class Foo(nn.Module):
    @nn.compact
    def __call__(self, x):
      self.param('mean', jax.nn.initializers.zeros, (2,))
      self.variable('stats', 'mean', jnp.zeros, (2,))
      return x

  v = init(Foo(), jnp.ones(2))
  assert shapes(v) == {'params': {'mean': (2,)}, 'stats': {'mean': (2,)}}


def test_control_flow_aliasing_changes_shapes():
  class WrongModule(nn.Module):
    @nn.compact
    def __call__(self, x, mode):
      if mode == 'encode':
        return Lin(3)(x)
      return Lin(5)(x)

  v = WrongModule().init(jax.random.key(0), jnp.ones((1, 2)), 'encode')
  with pytest.raises(errors.ScopeParamShapeError):
    WrongModule().apply(v, jnp.ones((1, 2)), 'decode')


def test_submodule_outside_setup_or_compact():
  class Foo(nn.Module):
    def setup(self):
      pass

    def __call__(self, x):
      return Lin(3)(x)

  with pytest.raises(errors.AssignSubModuleError) as info:
    init(Foo(), jnp.ones((1, 2)))
  assert (
    'Submodule Lin must be defined in `setup()` or in a method '
    'wrapped in `@compact`'
  ) in str(info.value)


def test_path_of_submodules():
  paths = []

  class Inner(nn.Module):
    @nn.compact
    def __call__(self, x):
      paths.append(self.path)
      return x

  class Outer(nn.Module):
    @nn.compact
    def __call__(self, x):
      paths.append(self.path)
      return Inner(name='child')(x)

  Outer().apply({}, 1.0)
  assert paths == [(), ('child',)]
