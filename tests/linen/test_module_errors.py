"""Errors raised by the Module system, where Flax raises them."""

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
      'kernel', jax.nn.initializers.ones, (x.shape[-1], self.features)
    )
    return x @ k


def test_call_compact_unbound():
  with pytest.raises(errors.CallCompactUnboundModuleError):
    Lin(2)(jnp.ones((1, 2)))


def test_call_setup_unbound():
  class M(nn.Module):
    def setup(self):
      self.sub = Lin(2)

  with pytest.raises(errors.CallSetupUnboundModuleError):
    M().setup()


def test_set_attribute_frozen():
  class SomeModule(nn.Module):
    @nn.compact
    def __call__(self, x, num_features=10):
      self.num_features = num_features
      return x

  with pytest.raises(errors.SetAttributeFrozenModuleError) as info:
    SomeModule().init(jax.random.key(0), jnp.ones(1))
  assert "Can't set num_features=10 for Module of type SomeModule" in str(
    info.value
  )


def test_set_attribute_in_setup_on_field():
  class Foo(nn.Module):
    features: int = 3

    def setup(self):
      self.features = 4

    def __call__(self, x):
      return x

  with pytest.raises(errors.SetAttributeInModuleSetupError):
    Foo().init(jax.random.key(0), jnp.ones(1))


def test_incorrect_post_init_override():
  class A(nn.Module):
    x: float

    def __post_init__(self):
      self.x_square = self.x**2

    @nn.compact
    def __call__(self, inputs):
      return inputs + 3

  with pytest.raises(errors.IncorrectPostInitOverrideError):
    A(x=3).init(jax.random.key(2), jnp.ones(3))


def test_post_init_override_with_super_works():
  class A(nn.Module):
    x: float

    def __post_init__(self):
      super().__post_init__()

    def __call__(self, inputs):
      return inputs + self.x

  assert A(x=3.0).apply({}, 1.0) == 4.0


def test_descriptor_attribute_error():
  class Foo(nn.Module):
    @property
    def prop(self):
      return self.non_existent_field

    def __call__(self, x):
      return self.prop

  with pytest.raises(errors.DescriptorAttributeError):
    Foo().init(jax.random.key(0), jnp.ones((1, 8)))


def test_property_works():
  class Foo(nn.Module):
    features: int = 2

    @property
    def doubled(self):
      return 2 * self.features

    def __call__(self):
      return self.doubled

  assert Foo().doubled == 4
  assert Foo().apply({}) == 4


def test_invalid_variables():
  with pytest.raises(errors.ApplyScopeInvalidVariablesTypeError):
    Lin(2).apply({'params': 3}, jnp.ones((1, 2)))
  with pytest.raises(errors.ApplyScopeInvalidVariablesStructureError):
    Lin(2).apply({'params': {'params': {}}}, jnp.ones((1, 2)))


def test_share_scope_on_unbound():
  with pytest.raises(errors.CallShareScopeOnUnboundModuleError):
    nn.share_scope(Lin(2), Lin(3))


def test_lifted_class_does_not_support_instances():
  with pytest.raises(errors.TransformTargetError):
    nn.scan(Lin(2))


def test_merge_param():
  assert nn.merge_param('deterministic', None, True) is True
  assert nn.merge_param('deterministic', False, None) is False
  with pytest.raises(ValueError, match='must be passed'):
    nn.merge_param('deterministic', None, None)
  with pytest.raises(ValueError, match='passed to the constructor and at'):
    nn.merge_param('deterministic', True, False)


def test_variables_outside_setup_or_compact():
  class M(nn.Module):
    def setup(self):
      pass

    def __call__(self):
      return self.param('w', jax.nn.initializers.zeros, ())

  with pytest.raises(ValueError, match='must be initialized in `setup'):
    M().init(jax.random.key(0))


def test_apply_method_without_parameters():
  class Foo(nn.Module):
    def __call__(self):
      return 1

  class NoArgs:
    def __call__(self):
      return 1

  for fn in (lambda: True, NoArgs(), jax.jit(lambda: 1)):
    with pytest.raises(errors.ApplyModuleInvalidMethodError, match='apply'):
      Foo().apply({}, method=fn)
    with pytest.raises(errors.ApplyModuleInvalidMethodError, match='apply'):
      Foo().init({}, method=fn)
  # Any parameter takes the Module (or fails when called).
  assert Foo().apply({}, method=lambda *a: len(a)) == 1
  with pytest.raises(TypeError, match='positional'):
    Foo().apply({}, method=lambda **k: 1)


def test_suffix_value_pairs():
  pairs = nn.module._get_suffix_value_pairs
  for x in ((), [], {}, None, 0):
    assert pairs(x) == [('', x)]
  assert pairs({'a': [], 'b': ()}) == []
  assert pairs({'b': [1, None], 'a': 2}) == [
    ('_a', 2),
    ('_b_0', 1),
    ('_b_1', None),
  ]
