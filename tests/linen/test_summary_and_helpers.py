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
    return x @ k + jnp.broadcast_to(b, x.shape[:-1] + b.shape)


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
  # Columns follow the iteration order of a set of the collection names,
  # as in Flax: it depends on PYTHONHASHSEED (and, when the two hashes
  # collide in the set's table, on insertion order), so only the set of
  # columns is fixed.
  columns = [c for c in _cells(header) if c in ('batch_stats', 'params')]
  assert sorted(columns) == ['batch_stats', 'params']
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
  assert 'Total Parameters: 1,001,000 (4.0 MB)' in _lines(text)


def _plain_flops(fn, *args):
  return int(jax.jit(fn).lower(*args).cost_analysis()['flops'])


def _cells(line):
  return [
    c.strip() for c in line.strip('│┃').split('│' if '│' in line else '┃')
  ]


def test_tabulate_flops_columns():
  x = jnp.ones((16, 9))
  text = Foo().tabulate(
    jax.random.key(0),
    x,
    compute_flops=True,
    compute_vjp_flops=True,
    console_kwargs={'width': 200},
  )
  lines = _lines(text)
  assert _cells(lines[2]) == [
    'path',
    'module',
    'inputs',
    'outputs',
    'flops',
    'vjp_flops',
    'params',
  ]
  rows = {
    cells[0]: cells
    for cells in map(_cells, lines[3:])
    if len(cells) == 7 and cells[1]  # the first line of each Module row
  }

  def lin(p, x):
    b = p['bias']
    return x @ p['kernel'] + jnp.broadcast_to(b, x.shape[:-1] + b.shape)

  # The VJP column is the pullback of the output together with the
  # variables (what ``apply(..., mutable=True)`` returns), each its own
  # cotangent: one more add per element of every variable used.
  def lin_vjp(p, x):
    y, bwd = jax.vjp(lambda p, x: (lin(p, x), p), p, x)
    return bwd(y)

  def foo(p, x):
    return lin(p['Lin_1'], lin(p['Lin_0'], x))

  def foo_vjp(p, x):
    y, bwd = jax.vjp(lambda p, x: (foo(p, x), p), p, x)
    return bwd(y)

  p0 = {'kernel': jnp.ones((9, 4)), 'bias': jnp.ones(4)}
  p1 = {'kernel': jnp.ones((4, 2)), 'bias': jnp.ones(2)}
  h = jnp.ones((16, 4))
  # A matmul and a bias add: 2 * 16 * 9 * 4 + 16 * 4.
  assert rows['Lin_0'][4] == str(_plain_flops(lin, p0, x)) == '1216'
  assert rows['Lin_1'][4] == str(_plain_flops(lin, p1, h)) == '288'
  assert rows['Lin_0'][5] == str(_plain_flops(lin_vjp, p0, x))
  assert rows['Lin_1'][5] == str(_plain_flops(lin_vjp, p1, h))
  both = {'Lin_0': p0, 'Lin_1': p1}
  assert rows[''][4] == str(_plain_flops(foo, both, x))
  assert rows[''][5] == str(_plain_flops(foo_vjp, both, x))
  assert int(rows[''][5]) > int(rows[''][4])
  # 'Total' sits in the column before the collections.
  assert _cells(lines[-3])[3:7] == ['', '', 'Total', '50 (200 B)']
  # Asking only for forward FLOPs adds only that column.
  text = Foo().tabulate(jax.random.key(0), x, compute_flops=True)
  assert 'vjp_flops' not in text and '│ 1216' in text


def test_tabulate_rich_kwargs_and_repeated_calls():
  class Twice(nn.Module):
    @nn.compact
    def __call__(self, x):
      lin = Lin(3)
      return lin(lin(x))

  x = jnp.ones((1, 3))
  text = Twice().tabulate(
    jax.random.key(0),
    x,
    table_kwargs={'title': 'Custom', 'show_lines': False},
    column_kwargs={'justify': 'right'},
    console_kwargs={'width': 100, 'force_terminal': False},
  )
  assert '\x1b[' not in text  # no terminal escapes
  lines = _lines(text)
  assert lines[0] == 'Custom'
  assert not any(line.startswith('├') for line in lines)
  assert any('│    Lin │' in line for line in lines)  # right-justified columns
  assert sum('Lin_0' in line for line in lines) == 1  # first call only
  repeated = _lines(Twice().tabulate(jax.random.key(0), x, show_repeated=True))
  assert (
    sum('Lin_0' in line.split('│')[1] for line in repeated if '│' in line) == 2
  )


def test_tabulate_one_row_per_module_and_method_labels():
  # As Flax 0.12.8: the first call of each Module makes its row (labelled
  # `Cls (method)` when not __call__); a Module's own-parameters cell leaves
  # out submodules made by any of its methods.
  class Child(nn.Module):
    @nn.compact
    def __call__(self, x):
      return self.helper(Lin(3, name='a')(x))

    def helper(self, x):
      return x * 2

    @nn.compact
    def encode(self, x):
      return Lin(2, name='e')(x)

  class Parent(nn.Module):
    @nn.compact
    def __call__(self, x):
      c = Child(name='child')
      return c.encode(c(x))

  class EncodeFirst(nn.Module):
    @nn.compact
    def __call__(self, x):
      c = Child(name='child')
      return c(c.encode(x)[:, :1] * jnp.ones((1, 3)))

  x = jnp.ones((1, 3))
  kw = dict(console_kwargs={'width': 150, 'force_terminal': False})
  rows = [
    [c.strip() for c in line.split('│')[1:3]]
    for line in _lines(Parent().tabulate(jax.random.key(0), x, **kw))
    if line.startswith('│') and line.split('│')[2].strip()
  ]
  assert rows == [
    ['', 'Parent'],
    ['child', 'Child'],
    ['child/a', 'Lin'],
    ['child/e', 'Lin'],
  ]
  text = Parent().tabulate(jax.random.key(0), x, show_repeated=True, **kw)
  assert 'Child (helper)' in text and 'Child (encode)' in text
  child_row = next(line for line in _lines(text) if line.startswith('│ child '))
  assert child_row.split('│')[5].strip() == ''  # e/* belong to child/e
  first = EncodeFirst().tabulate(jax.random.key(0), x, **kw)
  assert '│ child   │ Child (encode) │' in first
  assert '│ Child  ' not in first


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


# The exact text, styles included, of Flax 0.12.8's tabulate of the Foo of
# test_tabulate_exact_text.
EXACT_LINES = [
  '',
  '\x1b[3m                                  Foo Summary                                   \x1b[0m',
  '┏━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┓',
  '┃\x1b[1m \x1b[0m\x1b[1mpath \x1b[0m\x1b[1m \x1b[0m┃\x1b[1m \x1b[0m\x1b[1mmodule\x1b[0m\x1b[1m \x1b[0m┃\x1b[1m \x1b[0m\x1b[1minputs         \x1b[0m\x1b[1m \x1b[0m┃\x1b[1m \x1b[0m\x1b[1moutputs           \x1b[0m\x1b[1m \x1b[0m┃\x1b[1m \x1b[0m\x1b[1mparams              \x1b[0m\x1b[1m \x1b[0m┃',
  '┡━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━┩',
  '│       │ Foo    │ - \x1b[2mfloat32\x1b[0m[16,9] │ - \x1b[2mfloat32\x1b[0m[16,2]    │                      │',
  '│       │        │ - train: True   │ - h: \x1b[2mfloat32\x1b[0m[16,4] │                      │',
  '├───────┼────────┼─────────────────┼────────────────────┼──────────────────────┤',
  '│ Lin_0 │ Lin    │ \x1b[2mfloat32\x1b[0m[16,9]   │ \x1b[2mfloat32\x1b[0m[16,4]      │ bias: \x1b[2mfloat32\x1b[0m[4]     │',
  '│       │        │                 │                    │ kernel: \x1b[2mfloat32\x1b[0m[9,4] │',
  '│       │        │                 │                    │                      │',
  '│       │        │                 │                    │ \x1b[1m40 \x1b[0m\x1b[1;2m(160 B)\x1b[0m           │',
  '├───────┼────────┼─────────────────┼────────────────────┼──────────────────────┤',
  '│ Lin_1 │ Lin    │ \x1b[2mfloat32\x1b[0m[16,4]   │ \x1b[2mfloat32\x1b[0m[16,2]      │ bias: \x1b[2mfloat32\x1b[0m[2]     │',
  '│       │        │                 │                    │ kernel: \x1b[2mfloat32\x1b[0m[4,2] │',
  '│       │        │                 │                    │                      │',
  '│       │        │                 │                    │ \x1b[1m10 \x1b[0m\x1b[1;2m(40 B)\x1b[0m            │',
  '├───────┼────────┼─────────────────┼────────────────────┼──────────────────────┤',
  '│\x1b[1m \x1b[0m\x1b[1m     \x1b[0m\x1b[1m \x1b[0m│\x1b[1m \x1b[0m\x1b[1m      \x1b[0m\x1b[1m \x1b[0m│\x1b[1m \x1b[0m\x1b[1m               \x1b[0m\x1b[1m \x1b[0m│\x1b[1m \x1b[0m\x1b[1m             Total\x1b[0m\x1b[1m \x1b[0m│\x1b[1m \x1b[0m\x1b[1m50 \x1b[0m\x1b[1;2m(200 B)\x1b[0m\x1b[1m          \x1b[0m\x1b[1m \x1b[0m│',
  '└───────┴────────┴─────────────────┴────────────────────┴──────────────────────┘',
  '\x1b[1m                                                                                \x1b[0m',
  '\x1b[1m                          Total Parameters: 50 \x1b[0m\x1b[1;2m(200 B)\x1b[0m\x1b[1m                          \x1b[0m',
  '',
  '',
]


def test_tabulate_exact_text():
  class Foo(nn.Module):  # the title shows the class name
    @nn.compact
    def __call__(self, x, train=False):
      h = Lin(4)(x)
      return Lin(2)(h), {'h': h}

  text = Foo().tabulate(jax.random.key(0), jnp.ones((16, 9)), train=True)
  assert text.split('\n') == EXACT_LINES
  table = nn.tabulate(Foo(), jax.random.key(0))(jnp.ones((16, 9)), train=True)
  assert table == text


def test_private_get_module_table():
  import jax.numpy as jnp

  from flax.linen import summary

  class Dense(nn.Module):
    f: int = 2

    @nn.compact
    def __call__(self, x):
      k = self.param('kernel', jax.nn.initializers.ones, (x.shape[-1], self.f))
      return x @ k

  class M(nn.Module):
    @nn.compact
    def __call__(self, x, training: bool = False):
      self.variable('stats', 'n', lambda: jnp.zeros(()))
      return Dense(3)(Dense(2)(x))

  shapes = lambda t: jax.tree_util.tree_map(jnp.shape, t)  # noqa: E731
  fn = summary._get_module_table(
    M(), depth=None, show_repeated=False, compute_flops=True,
    compute_vjp_flops=False,
  )  # fmt: skip
  table = fn(
    {'params': jax.random.key(0)}, jnp.ones((1, 4)), training=True,
    mutable=True,
  )  # fmt: skip
  assert isinstance(table, summary.Table)
  assert table.collections == ('params', 'stats')
  assert [(r.path, type(r.module_copy).__name__, r.method) for r in table] == [
    ((), 'M', '__call__'),
    (('Dense_1',), 'Dense', '__call__'),
    (('Dense_0',), 'Dense', '__call__'),
  ]
  flops = [(r.flops, r.vjp_flops) for r in table]
  assert flops == [(28, -1), (16, -1), (12, -1)]
  assert shapes(table[0].module_variables) == {'params': {}, 'stats': {'n': ()}}
  assert shapes(table[1].counted_variables) == {'params': {'kernel': (4, 2)}}
  assert table[0].inputs[0].shape == (1, 4)
  assert table[0].inputs[1] == {'training': summary._ObjectRepresentation(True)}
  assert table[1].outputs.shape == (1, 2)
  cut = summary._get_module_table(M(), 0, False, False, False)(
    jax.random.key(0), jnp.ones((1, 4))
  )
  assert len(cut) == 1 and (cut[0].flops, cut[0].vjp_flops) == (-1, -1)
  assert shapes(cut[0].counted_variables) == {
    'params': {'Dense_0': {'kernel': (2, 3)}, 'Dense_1': {'kernel': (4, 2)}},
    'stats': {'n': ()},
  }
