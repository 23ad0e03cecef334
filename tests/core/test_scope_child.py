"""Scope.child, flags, name reservations and the scope module's helpers."""

import functools

import jax
import jax.numpy as jnp
import pytest

from flax.core import Scope, init, nn
from flax.core import scope as scope_lib


def dense(scope, x, features=2):
  w = scope.param(
    'kernel', jax.nn.initializers.normal(), (x.shape[-1], features)
  )
  return x @ w


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def test_child_names_follow_function_names_and_prefixes():
  def model(scope, x):
    h = scope.child(dense)(x, 3)
    h = scope.child(dense, 'foo')(h, 2)
    h = scope.child(dense, prefix='bar_')(h, 2)
    h = scope.child(nn.dense)(h, 2)
    h = scope.child(lambda s, x: dense(s, x, 2))(h)
    h = scope.child(dense, features=2)(h)
    return h

  y, variables = init(model)(jax.random.key(0), jnp.ones((1, 2)))
  assert shapes(variables) == {
    'params': {
      '<lambda>_0': {'kernel': (2, 2)},
      'bar_0': {'kernel': (2, 2)},
      'dense_0': {'kernel': (2, 3)},
      'dense_1': {'bias': (2,), 'kernel': (2, 2)},
      'dense_2': {'kernel': (2, 2)},
      'foo': {'kernel': (3, 2)},
    }
  }
  assert y.shape == (1, 2)


def test_child_without_name_uses_counter_only():
  class Call:
    def __call__(self, scope, x):
      return dense(scope, x)

  def model(scope, x):
    x = scope.child(functools.partial(dense, features=2))(x)
    x = scope.child(Call())(x)
    x = scope.child(dense, 'foo', prefix='zz')(x)
    return scope.child(dense, prefix='')(x)

  _, variables = init(model)(jax.random.key(0), jnp.ones((1, 2)))
  assert sorted(variables['params']) == ['0', '1', '2', 'foo']


def test_child_called_twice_reuses_its_scope():
  seen = []

  def model(scope, x):
    f = scope.child(dense)
    assert dict(scope.reservations) == {'dense_0': {None}}
    a = f(x)
    b = f(x)
    seen.append(bool((a == b).all()))
    return a

  _, variables = init(model)(jax.random.key(0), jnp.ones((1, 2)))
  assert seen == [True]
  assert list(variables['params']) == ['dense_0']


def test_child_rng_counters_continue_between_calls():
  def f(scope):
    return jax.random.key_data(scope.make_rng('dropout')).tolist()

  out = []

  def model(scope):
    g = scope.child(f)
    out.extend([g(), g()])
    out.append(scope.child(f, 'x')())
    out.append(f(scope.push('x', reuse=True)))

  init(model)({'params': jax.random.key(0), 'dropout': jax.random.key(1)})
  assert out == [
    [928446101, 1541330112],
    [1364599193, 4069304648],
    [2540631580, 2504339767],
    [2587495943, 3717772743],
  ]


def test_flags():
  scope = Scope({}, flags={'a': 1})
  assert scope.has_flag('a') and not scope.has_flag('b')
  assert scope.get_flag('a') == 1
  assert scope.get_flag('b', 3) == 3
  missing = scope.get_flag('b')
  assert isinstance(missing, ValueError)
  assert str(missing) == 'Flag b not present on scope.'
  assert scope.push('c').has_flag('a')


def test_reservations():
  scope = Scope({})
  scope.reserve('x', 'params')
  assert scope.name_reserved('x')
  assert scope.name_reserved('x', 'params')
  assert not scope.name_reserved('x', 'foo')
  assert not scope.name_reserved('y')
  with pytest.raises(ValueError, match='Duplicate use of scope name: "x"'):
    scope.reserve('x')
  scope.reserve('x', 'foo')
  with pytest.raises(TypeError, match='should be string'):
    scope.reserve(3)
  assert scope.push().name == '0'
  assert scope.push(prefix='a').name == 'a0'
  assert scope.default_name('a') == 'a1'
  assert dict(scope.reservations) == {
    'x': {'foo', 'params'},
    '0': {None},
    'a0': {None},
  }
  assert list(scope.rng_counters) == [
    (scope_lib.child_rng_token, '0'),
    (scope_lib.child_rng_token, 'a0'),
  ]


def test_is_filter_empty():
  f = scope_lib.is_filter_empty
  assert f(False) and f([]) and f(()) and f(set())
  assert not f(True) and not f('a')
  assert not f(scope_lib.DenyList(()))
  assert f(scope_lib.DenyList(True))
  assert not f(scope_lib.DenyList(False))
  with pytest.raises(Exception, match='Invalid Filter'):
    f(3)


def test_scope_module_names():
  from flax import config
  from flax.core.frozen_dict import FrozenDict, freeze, unfreeze
  from flax.ids import FlaxId

  assert scope_lib.FrozenDict is FrozenDict
  assert scope_lib.freeze is freeze and scope_lib.unfreeze is unfreeze
  assert scope_lib.config is config
  assert isinstance(scope_lib.uuid(), FlaxId)


def test_lazy_rng_is_a_dataclass_with_replace():
  rng = scope_lib.LazyRng.create(jax.random.key(0), 'a', 1)
  assert rng.suffix == ('a', 1)
  assert rng.replace(suffix=('b',)).suffix == ('b',)
  assert str(jax.tree_util.tree_structure(rng)) == (
    "PyTreeDef(CustomNode(LazyRng[(('a', 1),)], [*]))"
  )
  with pytest.raises(TypeError):
    scope_lib.LazyRng(jax.random.key(0))
