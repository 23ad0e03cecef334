"""``Module.parent`` as a ``ParentDescriptor``, and ``module.TestScope``.

Expected values were checked against Flax 0.12.8.
"""

import copy
import dataclasses
import gc
import pickle
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import linen as nn
from flax.core.scope import Scope
from flax.linen.module import ParentDescriptor
from flax.linen import module as linen_module


class Scale(nn.Module):
  f: int = 2

  @nn.compact
  def __call__(self, x):
    return x * self.f


class Dense(nn.Module):
  """A dense layer of this file (tests-linen installs no flax-layers)."""

  features: int

  @nn.compact
  def __call__(self, x):
    kernel = self.param(
      'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    bias = self.param('bias', jax.nn.initializers.zeros, (self.features,))
    return x @ kernel + bias.reshape((1,) * (x.ndim - 1) + (-1,))


def test_every_module_class_holds_a_parent_descriptor():
  assert type(Dense.__dict__['parent']) is ParentDescriptor
  assert type(Scale.__dict__['parent']) is ParentDescriptor
  assert ParentDescriptor.__module__ == 'flax.linen.module'
  assert 'parent' not in nn.Module.__dict__
  assert not hasattr(nn.Module, 'parent')
  assert Dense.parent is None  # read on the class


def test_unbound_module_stores_none_in_parent_ref():
  for module in (Scale(), Scale(parent=None)):
    assert sorted(vars(module)) == ['_id', '_parent_ref', '_state', 'f', 'name']
    assert vars(module)['_parent_ref'] is None
    assert module.parent is None


def test_parent_field_is_still_a_dataclass_field():
  field = Scale.__dataclass_fields__['parent']
  assert field.repr is False and field.init is True
  assert [f.name for f in dataclasses.fields(Scale())] == [
    'f',
    'parent',
    'name',
  ]
  assert Scale(3) == Scale(3)
  assert repr(Scale()) == 'Scale(\n    # attributes\n    f = 2\n)'


def test_submodule_holds_its_parent_weakly():
  seen = {}

  class Outer(nn.Module):
    @nn.compact
    def __call__(self, x):
      dense = Dense(2)
      seen['ref'] = vars(dense)['_parent_ref']
      seen['parent_is_self'] = dense.parent is self
      seen['own_ref'] = vars(self)['_parent_ref']
      seen['copy'] = copy.copy(dense)
      seen['deepcopy'] = copy.deepcopy(dense)
      seen['clone'] = dense.clone()
      seen['self'] = self
      return dense(x)

  Outer().init(jax.random.key(0), jnp.ones((1, 3)))
  assert type(seen['ref']) is weakref.ReferenceType
  assert seen['parent_is_self']
  assert isinstance(seen['own_ref'], Scope)  # a Scope parent is kept as is
  # copy and deepcopy keep the same parent (the weak reference is shared).
  assert type(vars(seen['copy'])['_parent_ref']) is weakref.ReferenceType
  assert seen['copy'].parent is seen['self']
  assert seen['deepcopy'].parent is seen['self']
  assert vars(seen['clone'])['_parent_ref'] is None


def test_parent_reads_none_once_the_parent_is_collected():
  kept = []

  class Outer(nn.Module):
    @nn.compact
    def __call__(self, x):
      sub = Scale()
      kept.append(sub)
      return sub(x)

  Outer().init(jax.random.key(0), jnp.ones(2))
  gc.collect()
  (sub,) = kept
  assert type(vars(sub)['_parent_ref']) is weakref.ReferenceType
  assert sub.parent is None
  assert repr(sub) == 'Scale(\n    # attributes\n    f = 2\n)'


def test_scope_parent_is_stored_strongly():
  scope = Scope({}, rngs={'params': jax.random.key(0)})
  dense = Dense(3, parent=scope)
  assert vars(dense)['_parent_ref'] is scope
  assert dense.parent is scope


def test_unbound_module_pickles():
  restored = pickle.loads(pickle.dumps(Scale(5)))
  assert restored == Scale(5)
  assert vars(restored)['_parent_ref'] is None


def test_descriptor_on_a_plain_object():
  class Holder:
    pass

  descriptor = ParentDescriptor()
  holder = Holder()
  with pytest.raises(AttributeError, match='_parent_ref'):
    descriptor.__get__(holder, Holder)
  module = Scale()
  descriptor.__set__(holder, module)
  assert type(vars(holder)['_parent_ref']) is weakref.ReferenceType
  assert descriptor.__get__(holder, Holder) is module
  descriptor.__set__(holder, 'x')
  assert vars(holder) == {'_parent_ref': 'x'}
  descriptor.__set__(holder, None)
  assert vars(holder) == {'_parent_ref': None}
  assert descriptor.__get__(None, Holder) is None


def _key_data(key):
  return jax.random.key_data(key).tolist()


def test_test_scope_make_rng_is_always_key_zero():
  scope = linen_module.TestScope(
    {}, rngs={'params': jax.random.key(0), 'dropout': jax.random.key(1)}
  )
  assert isinstance(scope, Scope)
  keys = [
    scope.make_rng('params'),
    scope.make_rng('params'),
    scope.make_rng('dropout'),
    scope.make_rng('not_given'),
  ]
  for key in keys:
    assert jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
    assert _key_data(key) == [0, 0]
  assert scope.rng_counters == {'params': 0, 'dropout': 0}
  assert _key_data(linen_module.TestScope({}).make_rng('x')) == [0, 0]
  with pytest.raises(TypeError):
    scope.make_rng()


def test_test_scope_params_and_children():
  scope = linen_module.TestScope(
    {}, rngs={'params': jax.random.key(3)}, mutable=True
  )
  w = scope.param('w', jax.random.normal, (2,))
  np.testing.assert_allclose(w, [1.6226422, 2.0252647], rtol=1e-6)
  z = scope.param('z', jax.nn.initializers.zeros, (2,))
  np.testing.assert_array_equal(z, [0.0, 0.0])
  assert scope.rng_counters == {'params': 0}
  empty = linen_module.TestScope({}, rngs={}, mutable=True)
  np.testing.assert_array_equal(
    empty.param('b', jax.nn.initializers.zeros, (2,)), [0.0, 0.0]
  )
  child = scope.push('child')
  assert type(child) is Scope
  assert _key_data(child.make_rng('params')) == [2172273249, 175751573]
  assert _key_data(child.make_rng('params')) == [3754833579, 3265069421]


def test_dense_bound_to_a_test_scope():
  scope = linen_module.TestScope(
    {}, rngs={'params': jax.random.key(5)}, mutable=True
  )
  dense = Dense(2, parent=scope)
  y = dense(jnp.ones((1, 3)))
  np.testing.assert_allclose(y, [[0.79503775, 0.4772395]], rtol=1e-6)
  shapes = jax.tree.map(jnp.shape, dense.variables)
  assert shapes == {'params': {'bias': (2,), 'kernel': (3, 2)}}
