"""compact_name_scope and the names offered at flax.linen.module."""

import jax
import jax.numpy as jnp
import pytest

from flax import errors
from flax import linen as nn
from flax.linen import module as module_lib


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


class Lin(nn.Module):
  f: int

  @nn.compact
  def __call__(self, x):
    return x @ self.param('k', jax.nn.initializers.ones, (x.shape[-1], self.f))


class AutoEncoder(nn.Module):
  @nn.compact_name_scope
  def encode(self, x):
    return Lin(3)(x)

  @nn.compact_name_scope
  def decode(self, x):
    return Lin(2)(x)

  def __call__(self, x):
    return self.decode(self.encode(x))


def test_compact_name_scope_names_and_methods():
  m = AutoEncoder()
  v = m.init(jax.random.key(0), jnp.ones((1, 2)))
  assert shapes(v) == {
    'params': {
      'decode': {'Lin_0': {'k': (3, 2)}},
      'encode': {'Lin_0': {'k': (2, 3)}},
    }
  }
  assert m.apply(v, jnp.ones((1, 2))).tolist() == [[6.0, 6.0]]
  assert m.apply(v, jnp.ones((1, 2)), method='encode').tolist() == [
    [2.0, 2.0, 2.0]
  ]
  assert m.apply(v, jnp.ones((1, 2)), method=AutoEncoder.encode).shape == (1, 3)


def test_compact_name_scope_variables_stay_on_the_module():
  class B(nn.Module):
    @nn.compact_name_scope
    def f(self, x):
      return x + self.param('b', jax.nn.initializers.zeros, x.shape)

    @nn.compact
    def __call__(self, x):
      return Lin(2)(self.f(x))

  v = B().init(jax.random.key(0), jnp.ones((1, 2)))
  assert shapes(v) == {'params': {'Lin_0': {'k': (2, 2)}, 'b': (1, 2)}}

  class Twice(nn.Module):
    @nn.compact_name_scope
    def f(self, x):
      return x + self.param('b', jax.nn.initializers.zeros, x.shape)

    @nn.compact
    def __call__(self, x):
      return self.f(self.f(x))

  with pytest.raises(errors.NameInUseError, match='Could not create param "b"'):
    Twice().init(jax.random.key(0), jnp.ones((1, 2)))


def test_compact_name_scope_reuses_submodules_and_mixes_with_setup():
  class B2(nn.Module):
    @nn.compact_name_scope
    def f(self, x):
      return Lin(2)(x)

    def __call__(self, x):
      return self.f(self.f(x))

  v = B2().init(jax.random.key(0), jnp.ones((1, 2)))
  assert shapes(v) == {'params': {'f': {'Lin_0': {'k': (2, 2)}}}}

  class C(nn.Module):
    @nn.compact_name_scope
    def f(self, x):
      self.sow('intermediates', 'h', x)
      return Lin(2, name='named')(x)

    def setup(self):
      self.d = Lin(2)

    def __call__(self, x):
      return self.d(self.f(x))

  v = C().init(jax.random.key(0), jnp.ones((1, 2)))
  assert shapes(v) == {
    'params': {'d': {'k': (2, 2)}, 'f': {'named': {'k': (2, 2)}}}
  }
  _, state = C().apply(v, jnp.ones((1, 2)), mutable=True)
  assert shapes(state['intermediates']) == {'h': ((1, 2),)}
  assert repr(module_lib.CompactNameScope) == (
    "<class 'flax.linen.module.CompactNameScope'>"
  )


def test_merge_param():
  assert module_lib.merge_param('x', 1, None) == 1
  assert module_lib.merge_param('x', None, 2) == 2
  assert module_lib.merge_param('x', False, None) is False
  with pytest.raises(ValueError) as info:
    module_lib.merge_param('x', 1, 2)
  assert str(info.value) == (
    'Parameter "x" was passed to the constructor and at call time. Should '
    'be passed just once.'
  )
  with pytest.raises(ValueError) as info:
    module_lib.merge_param('x', None, None)
  assert str(info.value) == (
    'Parameter "x" must be passed to the constructor or at call time.'
  )


def test_module_path_names():
  m = module_lib
  assert m.tuple_reduce((1,), 2) == (1, 2) and m.tuple_init() == ()
  assert m.apply is nn.apply and m.init is nn.init
  assert m.intercept_methods is nn.intercept_methods
  assert issubclass(nn.Module, m.ModuleBase)
  assert m.capture_call_intermediates(None, '__call__')
  assert not m.capture_call_intermediates(None, 'encode')
  stack = m.ThreadLocalStack()
  stack.push(1)
  stack.push(2)
  assert stack.pop() == 2 and list(stack) == [1] and len(stack) == 1
  assert m.module_field(kw_only=True, default=None).default is None


def test_summary_row_and_table():
  from flax.linen import summary

  row = summary.Row(
    ('a',),
    None,
    '__call__',
    (),
    None,
    {'params': {'w': jnp.ones(3)}},
    {
      'params': {'w': jnp.ones(3), 'b': {'c': jnp.ones((2, 2), jnp.int8)}},
      'batch': {},
    },
    0,
    0,
  )
  assert row.size_and_bytes(['params', 'batch', 'missing']) == {
    'params': (7, 16),
    'batch': (0, 0),
    'missing': (0, 0),
  }
  table = summary.Table(None, ['params'], [row])
  assert len(table) == 1 and table[0] is row
  assert table.module is None and table.collections == ['params']
  assert summary.LazyRng.__module__ == 'flax.core.scope'


def test_transform_names():
  from flax.core import lift
  from flax.linen import transforms

  p = transforms.VariablePlaceholder('params', 'w', True, 2)
  assert repr(p) == (
    "VariablePlaceholder(collection='params', name='w', unbox=True, id=2)"
  )
  assert p.replace(id=3).id == 3
  assert transforms.InstancePlaceholder(int, {}, 1).cls is int
  a = transforms.lift_transform_cached(lift.checkpoint, Lin)
  b = transforms.lift_transform_cached(lift.checkpoint, Lin)
  assert a is b and a.__name__ == 'CheckpointLin'
  assert transforms.lift_transform(lift.checkpoint, Lin) is not a
  assert transforms.named_call is nn.named_call


def test_tabulate_shows_compact_name_scopes_as_modules():
  import re

  text = nn.tabulate(AutoEncoder(), jax.random.key(0))(jnp.ones((1, 2)))
  rows = [
    [c.strip() for c in line.strip('│').split('│')][:2]
    for line in re.sub(r'\x1b\[[0-9;]*m', '', text).splitlines()
    if line.startswith('│') and line.split('│')[2].strip()
  ]
  assert rows == [
    ['', 'AutoEncoder'],
    ['encode', 'CompactNameSc…'],
    ['encode/Lin_0', 'Lin'],
    ['decode', 'CompactNameSc…'],
    ['decode/Lin_0', 'Lin'],
  ]
