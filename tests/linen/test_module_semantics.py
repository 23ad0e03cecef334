"""Module construction, copying, hashing, interception and introspection."""

import inspect
import typing

import jax
import jax.numpy as jnp
import pytest

from flax import linen as nn
from flax.core import Scope


class Id(nn.Module):
  def __call__(self, x):
    return x


class Lin(nn.Module):
  features: int = 2

  @nn.compact
  def __call__(self, x):
    w = self.param('w', jax.nn.initializers.ones, (x.shape[-1], self.features))
    return x @ w


class Holder(nn.Module):
  def setup(self):
    self.d = Lin()
    self._hidden = 3

  def __call__(self, x):
    return self.d(x)

  def other(self, x):
    return x


def test_copy_in_compact_makes_a_new_autonamed_child():
  seen = {}

  class P(nn.Module):
    @nn.compact
    def __call__(self, x):
      d = Lin()
      y = d(x)
      c = d.copy()
      seen['copy'] = (c.name, c.parent is self)
      seen['named'] = d.copy(name='foo').name
      seen['clone'] = (d.clone().name, d.clone().parent)
      unparented = d.copy(parent=None)
      seen['unparented'] = (unparented.name, unparented.parent)
      return c(y)

  params = P().init(jax.random.key(0), jnp.ones((1, 2)))['params']
  assert sorted(params) == ['Lin_0', 'Lin_1']
  assert seen == {
    'copy': ('Lin_1', True),
    'named': 'foo',
    'clone': ('Lin_0', None),
    'unparented': (None, None),
  }


def test_copy_in_setup_is_named_by_attribute():
  class Q(nn.Module):
    def setup(self):
      self.d = Lin()
      self.e = self.d.copy()

    def __call__(self, x):
      return self.e(self.d(x))

  params = Q().init(jax.random.key(0), jnp.ones((1, 2)))['params']
  assert sorted(params) == ['d', 'e']


def test_copy_of_top_level_module():
  c = Lin(name='x').copy()
  assert (c.name, c.parent) == (None, None)


def test_interceptor_gets_bound_orig_method():
  def icpt(f, args, kwargs, ctx):
    return ctx.orig_method(3) + f(*args, **kwargs)

  with nn.intercept_methods(icpt):
    assert Id(parent=None)(1.0) == 4.0


def test_interceptors_stack_outermost_first_and_see_setup():
  log = []

  def make(tag):
    def f(next_fun, args, kwargs, ctx):
      log.append((tag, type(ctx.module).__name__, ctx.method_name))
      return next_fun(*args, **kwargs)

    return f

  with nn.intercept_methods(make('outer')):
    with nn.intercept_methods(make('inner')):
      v = Holder().init(jax.random.key(0), jnp.ones((1, 2)))
  assert log == [
    ('outer', 'Holder', 'setup'),
    ('inner', 'Holder', 'setup'),
    ('outer', 'Holder', '__call__'),
    ('inner', 'Holder', '__call__'),
    ('outer', 'Lin', '__call__'),
    ('inner', 'Lin', '__call__'),
  ]
  log.clear()
  with nn.intercept_methods(make('a')):
    Holder().apply(v, jnp.ones((1, 2)), method='other')
  assert log == [('a', 'Holder', 'setup'), ('a', 'Holder', 'other')]


HASH_ERROR = "Can't call __hash__ on modules that hold variables."


def test_hash_of_module_holding_variables_is_a_type_error():
  assert hash(Lin(3)) == hash(Lin(3))
  with pytest.raises(TypeError, match=HASH_ERROR):
    hash(Lin(3, parent=Scope({})))
  with pytest.raises(TypeError, match=HASH_ERROR):
    hash(Lin().bind({}))

  class Custom(nn.Module):
    def __hash__(self):
      return 7

  assert hash(Custom()) == 7
  with pytest.raises(TypeError, match=HASH_ERROR):
    hash(Custom(parent=Scope({})))

  seen = []

  class P(nn.Module):
    @nn.compact
    def __call__(self, x):
      for m in (self, Lin()):
        try:
          hash(m)
        except TypeError as e:
          seen.append(str(e))
      return x

  P().init(jax.random.key(0), 1.0)
  assert seen == ["Can't call __hash__ on modules that hold variables."] * 2


def test_parent_and_name_are_keyword_only():
  class F(nn.Module):
    a: int

  class G(nn.Module):
    a: int
    b: int = 2

  with pytest.raises(TypeError, match='takes 2 positional arguments but 3'):
    F(1, None)
  with pytest.raises(TypeError, match='positional arguments but 4 were given'):
    G(1, 2, None)
  assert G(1, 2, name='x').name == 'x'
  assert F(1, parent=None).parent is None
  sig = inspect.signature(G)
  assert [(p.name, p.kind.name) for p in sig.parameters.values()] == [
    ('a', 'POSITIONAL_OR_KEYWORD'),
    ('b', 'POSITIONAL_OR_KEYWORD'),
    ('parent', 'POSITIONAL_OR_KEYWORD'),
    ('name', 'POSITIONAL_OR_KEYWORD'),
  ]

  class K(nn.Module, kw_only=True):
    a: int

  assert str(inspect.signature(K)).startswith('(*, a: int, parent: ')


def test_type_hints_of_module_subclass():
  class Net(nn.Module):
    layers: int

  hints = typing.get_type_hints(Net)
  assert hints['layers'] is int
  assert hints['name'] == typing.Optional[str]
  assert repr(hints['parent']) == (
    'typing.Union[flax.linen.module.Module, flax.core.scope.Scope, '
    'flax.linen.module._Sentinel, NoneType]'
  )


def test_dir_runs_setup_and_lists_private_names():
  unbound = dir(Holder())
  assert 'd' not in unbound
  assert '_state' in unbound and '__call__' in unbound
  bound = dir(Holder().bind({}))
  assert 'd' in bound and '_hidden' in bound


def test_apply_with_lambda_method():
  out = Id().apply({}, 1.0, method=lambda m, x: x)
  assert type(out) is float


def test_unbound_module_errors():
  m = Id()
  cases = [
    (lambda: m.make_rng('x'), "Can't use RNGs on unbound modules"),
    (lambda: m.has_rng('x'), "Can't query for RNGs on unbound modules"),
    (lambda: m.has_variable('a', 'b'), "Can't access variables on unbound"),
    (lambda: m.get_variable('a', 'b'), "Can't access variables on unbound"),
    (lambda: m.put_variable('a', 'b', 1), "Can't access variables on unbound"),
    (lambda: m.sow('a', 'b', 1), "Can't store variables on unbound"),
    (lambda: m.perturb('a', 1), "Can't store variables on unbound"),
    (lambda: m.is_mutable_collection('a'), "Can't check mutability on unbound"),
  ]
  for fn, message in cases:
    with pytest.raises(ValueError, match=message):
      fn()


def test_init_and_apply_argument_errors():
  from flax import errors

  class NoCall(nn.Module):
    def foo(self, x):
      return x

  setup_hint = 'object has no attribute "__call__". If "__call__" is defined'
  with pytest.raises(AttributeError, match=setup_hint):
    NoCall().init(jax.random.key(0), 1.0)
  with pytest.raises(AttributeError, match=setup_hint):
    NoCall().apply({}, 1.0)
  with pytest.raises(
    ValueError,
    match='First argument passed to an init function should be a '
    r'``jax.PRNGKey`` or a dictionary mapping strings to ``jax.PRNGKey``.',
  ):
    Lin().init({'params': 1}, jnp.ones((1, 2)))
  with pytest.raises(
    ValueError, match='The ``rngs`` argument passed to an apply function'
  ):
    Id().apply({}, 1.0, rngs={'dropout': 3})
  with pytest.raises(errors.InvalidRngError, match='RNGs should be of shape'):
    Id().init(1, 1.0)
  with pytest.raises(
    errors.ApplyModuleInvalidMethodError, match='3 is not a valid function'
  ):
    Id().apply({}, 1.0, method=3)


def test_private_module_helpers():
  from flax.core import FrozenDict
  from flax.linen import module as module_lib

  frozen = module_lib._freeze_attr({'a': [1, {'b': [2]}], 'c': (3,)})
  assert isinstance(frozen, FrozenDict)
  assert frozen == FrozenDict({'a': (1, FrozenDict({'b': (2,)})), 'c': (3,)})

  class Base:
    def f(self):
      pass

  class Child(Base):
    x = 3

    def g(self):
      pass

    def __call__(self):
      pass

    @staticmethod
    def s():
      pass

    @classmethod
    def c(cls):
      pass

    @property
    def p(self):
      return 1

  assert set(module_lib._get_local_method_names(Child)) == {'g', '__call__'}
  assert module_lib._get_local_method_names(Child, exclude=['g']) == (
    '__call__',
  )
  pairs = module_lib._get_suffix_value_pairs([1, {'a': 2, 'b': [3]}, (4,)])
  assert pairs == [('_0', 1), ('_1_a', 2), ('_1_b_0', 3), ('_2_0', 4)]
  assert module_lib._get_suffix_value_pairs(5) == [('', 5)]
  lin = Lin()
  assert module_lib._get_suffix_value_pairs({'x': lin}) == [('_x', lin)]


def test_compact_name_scope_methods():
  class CN(nn.Module):
    @nn.compact_name_scope
    def up(self, x):
      return x

    @nn.compact_name_scope
    def down(self, x):
      return x

    def __call__(self, x):
      return x

  class CN2(CN):
    @nn.compact_name_scope
    def side(self, x):
      return x

  class CN3(CN):
    def up(self, x):
      return x

  assert CN._compact_name_scope_methods == ('down', 'up')
  assert CN2._compact_name_scope_methods == ('down', 'side', 'up')
  assert CN3._compact_name_scope_methods == ('down',)
  assert Lin._compact_name_scope_methods == ()
  assert not hasattr(nn.Module, '_compact_name_scope_methods')


def test_declaring_variables_on_unbound_module():
  for fn in (
    lambda: Id().param('a', lambda k: 1),
    lambda: Id().variable('c', 'a', lambda: 1),
  ):
    with pytest.raises(AssertionError):
      fn()
    with pytest.raises(ValueError, match="Can't declare .* on unbound modules"):
      fn()
