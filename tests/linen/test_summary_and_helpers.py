"""tabulate, Sequential, named calls, interceptors, share_scope, aliases."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import linen as nn


class Lin(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    b = self.param('bias', jax.nn.initializers.zeros, (self.features,))
    return x @ k + b


class Foo(nn.Module):
  @nn.compact
  def __call__(self, x):
    h = Lin(4)(x)
    return Lin(2)(h)


def _lines(text):
  text = re.sub(r'\x1b\[[0-9;]*m', '', text)
  return [line.strip() for line in text.splitlines() if line.strip()]


EXPECTED = """\
Foo Summary
┏━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┓
┃ path  ┃ module ┃ inputs        ┃ outputs       ┃ params               ┃
┡━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━┩
│       │ Foo    │ float32[16,9] │ float32[16,2] │                      │
├───────┼────────┼───────────────┼───────────────┼──────────────────────┤
│ Lin_0 │ Lin    │ float32[16,9] │ float32[16,4] │ bias: float32[4]     │
│       │        │               │               │ kernel: float32[9,4] │
│       │        │               │               │                      │
│       │        │               │               │ 40 (160 B)           │
├───────┼────────┼───────────────┼───────────────┼──────────────────────┤
│ Lin_1 │ Lin    │ float32[16,4] │ float32[16,2] │ bias: float32[2]     │
│       │        │               │               │ kernel: float32[4,2] │
│       │        │               │               │                      │
│       │        │               │               │ 10 (40 B)            │
├───────┼────────┼───────────────┼───────────────┼──────────────────────┤
│       │        │               │         Total │ 50 (200 B)           │
└───────┴────────┴───────────────┴───────────────┴──────────────────────┘
Total Parameters: 50 (200 B)"""


def test_tabulate_table():
  x = jnp.ones((16, 9))
  text = Foo().tabulate(jax.random.key(0), x)
  assert _lines(text) == _lines(EXPECTED)
  assert nn.tabulate(Foo(), jax.random.key(0))(x) == text


def test_tabulate_depth_and_collections():
  class Stats(nn.Module):
    @nn.compact
    def __call__(self, x):
      self.variable('batch_stats', 'mean', jnp.zeros, x.shape[-1:])
      return Foo()(x)

  text = Stats().tabulate(jax.random.key(0), jnp.ones((1, 3)), depth=1)
  lines = _lines(text)
  header = lines[2]
  assert 'batch_stats' in header and header.index('batch_stats') < (
    header.index('params')
  )
  assert not any(line.startswith('│ Foo_0/') for line in lines)
  # Foo_0 is cut off at depth 1 and counts all its submodules' params.
  assert any('Foo_0' in line for line in lines)
  assert any('26 (104 B)' in line for line in lines)
  assert lines[-1] == 'Total Parameters: 29 (116 B)'


def test_tabulate_bytes_units():
  class Big(nn.Module):
    @nn.compact
    def __call__(self, x):
      return Lin(1000)(x)

  text = Big().tabulate(jax.random.key(0), jnp.ones((1, 1000)))
  assert '1,001,000 (4.0 MB)' in text


def test_module_paths():
  paths = Foo().module_paths(jax.random.key(0), jnp.ones((1, 3)))
  assert list(paths) == ['', 'Lin_0', 'Lin_1']
  assert paths['Lin_1'].features == 2 and paths['Lin_1'].scope is None


def test_sequential():
  class AddOne(nn.Module):
    def __call__(self, x):
      return x + 1

  model = nn.Sequential([Lin(3), jnp.tanh, Lin(2), AddOne()])
  x = jnp.ones((1, 4))
  v = model.init(jax.random.key(0), x)
  assert sorted(v['params']) == ['layers_0', 'layers_2']
  p = v['params']
  expected = (
    Lin(2).apply(
      {'params': p['layers_2']}, jnp.tanh(x @ p['layers_0']['kernel'])
    )
    + 1
  )
  np.testing.assert_allclose(model.apply(v, x), expected, rtol=1e-6)
  # A slice of the layers applies with a superset of parameters.
  part = nn.Sequential(model.layers[:2])
  np.testing.assert_allclose(
    part.apply(v, x), jnp.tanh(x @ p['layers_0']['kernel']), rtol=1e-6
  )


def test_sequential_unpacks_tuples_and_dicts():
  model = nn.Sequential(
    [lambda x: (x, 2 * x), lambda a, b: {'a': a, 'b': b}, lambda a, b: a + b]
  )
  assert model.apply({}, 1.0) == 3.0
  with pytest.raises(ValueError):
    nn.Sequential([]).apply({}, 1.0)
  with pytest.raises(ValueError, match="'layers' must be a sequence"):
    nn.Sequential(Lin(2))


def test_sequential_inline_keeps_callers_names():
  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.Sequential([Lin(2), Lin(1)])(x)

  v = M().init(jax.random.key(0), jnp.ones((1, 3)))
  assert sorted(v['params']) == ['Lin_0', 'Lin_1']


def test_named_call_switches():
  def count_scopes(enable):
    with nn.override_named_call(enable):
      jaxpr = jax.make_jaxpr(
        lambda x: Foo().init_with_output(jax.random.key(0), x)[0]
      )(jnp.ones((1, 2)))
    return str(jaxpr.jaxpr.eqns[-1].source_info.name_stack)

  assert 'Lin_1' in count_scopes(True)
  assert 'Lin_1' not in count_scopes(False)
  nn.disable_named_call()
  nn.enable_named_call()


def test_intercept_methods():
  calls = []

  def record(next_fun, args, kwargs, context):
    calls.append((context.module.name, context.method_name))
    return next_fun(*args, **kwargs)

  def double(next_fun, args, kwargs, context):
    out = next_fun(*args, **kwargs)
    return 2 * out if context.module.name is None else out

  v = Foo().init(jax.random.key(0), jnp.ones((1, 3)))
  plain = Foo().apply(v, jnp.ones((1, 3)))
  with nn.intercept_methods(record):
    with nn.intercept_methods(double):
      y = Foo().apply(v, jnp.ones((1, 3)))
  np.testing.assert_allclose(y, 2 * plain)
  assert calls == [
    (None, '__call__'),
    ('Lin_0', '__call__'),
    ('Lin_1', '__call__'),
  ]


def test_share_scope():
  class Wrapper(nn.Module):
    def setup(self):
      self.inner = Lin(2)
      nn.share_scope(self, self.inner)

    def __call__(self, x):
      return self.inner(x)

  v = Wrapper().init(jax.random.key(0), jnp.ones((1, 3)))
  assert sorted(v['params']) == ['bias', 'kernel']


def test_exports():
  assert nn.Variable is not None and nn.FrozenDict is not None
  assert nn.PARTITION_NAME == 'partition_name'
  assert nn.DenyList('x').deny == 'x'
  from flax.linen import module as module_mod
  from flax.linen import transforms as transforms_mod

  assert module_mod.Module is nn.Module
  assert transforms_mod.vmap is nn.vmap


def test_named_call_decorator():
  class M(nn.Module):
    @nn.named_call
    def __call__(self, x):
      return x * 2

  jaxpr = jax.make_jaxpr(lambda x: M(name='m').apply({}, x))(1.0)
  assert 'm' in str(jaxpr.jaxpr.eqns[-1].source_info.name_stack)
  assert M().apply({}, 2.0) == 4.0


def test_repr_of_base_module():
  assert repr(nn.Module()) == 'Module()'
