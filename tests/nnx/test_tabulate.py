"""nnx.tabulate prints the tables of Flax 0.12.8 (data/tabulate/*.txt).

Tables of models made of NNX layers: tests/layers/nnx/test_nnx_tabulate.py.
"""

import pathlib
import sys

import numpy as np
import pytest
import yaml

import jax
import jax.numpy as jnp
from flax import nnx
from flax.nnx import summary

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import tabulate_models  # noqa: E402

DATA = pathlib.Path(__file__).parent / 'data' / 'tabulate'
CASES = tabulate_models.cases()
X23 = jnp.ones((2, 3))


@pytest.mark.parametrize('name', sorted(CASES))
def test_table_text(name):
  expected = (DATA / f'{name}.txt').read_text(encoding='utf-8')
  assert CASES[name]() == expected


def test_tabulate_leaves_the_object_unchanged():
  top = tabulate_models.Top(nnx.Rngs(0, params=1))
  nnx.tabulate(top, X23)
  assert int(top.count[...]) == 0
  assert int(top.rngs.params.count[...]) == 0


def test_row_filter_and_depth():
  top = tabulate_models.Top(nnx.Rngs(0, params=1))
  wide = {'width': 250, 'force_terminal': False}
  assert 'rngs/params' not in nnx.tabulate(top, X23, console_kwargs=wide)
  # Without the default filter the RNG stream calls show up.
  table = nnx.tabulate(
    top, X23, row_filter=lambda row: True, console_kwargs=wide
  )
  assert 'rngs/params' in table
  assert (
    summary.filter_rng_streams(
      summary.CallInfo(0, 0, nnx.RngStream, (), '', None, None, None)
    )
    is False
  )
  assert ' e ' in nnx.tabulate(top, X23, console_kwargs=wide)
  assert ' e ' not in nnx.tabulate(top, X23, depth=0, console_kwargs=wide)


def test_summary_helpers():
  array = summary.ArrayRepr.from_array(jnp.ones((2, 3)))
  assert str(array) == '[dim]float32[/dim][2,3]'
  assert (array.shape, str(array.dtype)) == ((2, 3), 'float32')
  assert str(summary.SimpleObjectRepr(3)) == 'int(...)'
  assert repr(summary.SizeBytes(3, 12)) == '3 [dim](12 B)[/dim]'
  dumped = yaml.dump({'a': None, 'b': [1, None]}, Dumper=summary.NoneDumper)
  assert dumped == 'a: None\nb:\n- 1\n- None\n'
  infos = summary.object_infos(tabulate_models.Outer())
  root = next(info for info in infos.values() if info.path == ())
  assert {t.__name__: (s.size, s.bytes) for t, s in root.stats.items()} == {
    'BatchStat': (5, 10),
    'MyParam': (12, 48),
    'Param': (600000, 2400000),
    'Variable': (2, 8),
  }
  assert list(root.variable_groups[nnx.Param]) == ['big']
  np.testing.assert_array_equal(
    root.variable_groups[nnx.BatchStat]['b'][...], 0
  )


def test_display_prints_repr(capsys):
  nnx.display(nnx.State({}))
  assert capsys.readouterr().out == 'State({})\n'
  assert nnx.display.__module__ == 'flax.nnx.visualization'
  assert summary.display is nnx.display


class _Tag:
  def __init__(self, name):
    self.name = name

  def __repr__(self):
    return f'Tag<{self.name}>'


class _Echo(nnx.Module):
  """Returns ``out(x)``; its Param carries the given metadata."""

  def __init__(self, out=lambda *a, **k: 0, **metadata):
    self.w = nnx.Param(jnp.ones(2), **metadata)
    self.out = out

  def __call__(self, *args, **kwargs):
    return self.out(*args, **kwargs)


def _column(table, index):
  """The lines of column ``index`` of the first row of ``table``."""
  lines = []
  for line in table.splitlines():
    if line.startswith('│'):
      cell = line.split('│')[index]
      if cell.strip() == 'Total':
        break
      lines.append(cell.rstrip()[1:])
  while lines and not lines[-1].strip():
    lines.pop()
  return '\n'.join(lines)


O1 = jnp.ones(1)
INPUT_CASES = {
  # (args, kwargs): the inputs cell, as Flax 0.12.8 shows it
  'x and a None keyword': ((O1,), {'mask': None}, '- float32[1]\nmask: None'),
  'x and a None': ((O1, None), {}, '- float32[1]\n- None'),
  'x and an empty dict': ((O1, {}), {}, '- float32[1]\n- {}'),
  'None alone': ((None,), {}, ''),
  'empty dict alone': (({},), {}, ''),
  'dict of arrays': (
    ({'a': O1, 'b': {'c': jnp.zeros(1, jnp.int32)}},),
    {},
    'a: float32[1]\nb:\n  c: int32[1]',
  ),
  'dict without leaves kept': (({'q': None},), {}, 'q: None'),
  'dict entries without leaves dropped': (
    ({'a': 1, 'b': None, 'c': [], 'd': {'e': None}},),
    {},
    'a: 1',
  ),
  'keywords without leaves kept': (
    (O1,),
    {'kw': None, 'opt': {}},
    '- float32[1]\nkw: None\nopt: {}',
  ),
  'keyword without leaves beside one with leaves': (
    (O1,),
    {'k': None, 'z': 1},
    '- float32[1]\nz: 1',
  ),
  'top-level sequence keeps its tail': (
    ([1, None, None],),
    {},
    '- 1\n- None\n- None',
  ),
  'nested sequence ends at its last leaf': (
    (O1, [1, None]),
    {},
    '- float32[1]\n- - 1',
  ),
  'inner parts without leaves are hollow': (
    ([O1, {'a': None}, O1, {'a': None}],),
    {},
    '- float32[1]\n- {}\n- float32[1]\n- a: None',
  ),
  'inner None kept': (([None, [None], 1],), {}, '- None\n- []\n- 1'),
  'objects by repr': (
    (O1, 3, 'str', 2.5, True, _Tag(5)),
    {},
    '- float32[1]\n- 3\n- str\n- 2.5\n- True\n- Tag<5>',
  ),
}


@pytest.mark.parametrize('name', sorted(INPUT_CASES))
def test_inputs_cell(name):
  args, kwargs, expected = INPUT_CASES[name]
  table = nnx.tabulate(
    _Echo(), *args, console_kwargs=tabulate_models.WIDE, **kwargs
  )
  assert _column(table, 3) == expected


OUTPUT_CASES = {
  'None': (lambda x: None, ''),
  'empty dict': (lambda x: {}, ''),
  'only None entries': (lambda x: {'n': None}, 'n: None'),
  'tuple with trailing None': (lambda x: (x, None), '- float32[1]\n- None'),
  'None and empty': (lambda x: (None, {}), '- None\n- {}'),
  'dict pruned': (
    lambda x: {'a': x, 'b': [], 'c': {'d': None, 'e': 1}},
    'a: float32[1]\nc:\n  e: int32[]',
  ),
}


@pytest.mark.parametrize('name', sorted(OUTPUT_CASES))
def test_outputs_cell(name):
  fn, expected = OUTPUT_CASES[name]
  table = nnx.tabulate(_Echo(fn), O1, console_kwargs=tabulate_models.WIDE)
  assert _column(table, 4) == expected


METADATA_CASES = {
  'custom object': (
    {'meta': _Tag(7)},
    'w:\n  meta: Tag<7>\n  value: float32[2]',
  ),
  'objects in containers': (
    {'lst': [_Tag(1), None], 'd': {'k': _Tag(2), 'gone': None}},
    'w:\n  d:\n    k: Tag<2>\n  lst:\n  - Tag<1>\n  value: float32[2]',
  ),
  'None inside a list': (
    {'a': [None, 1], 'c': [1, None, 3]},
    'w:\n  a:\n  - None\n  - 1\n  c:\n  - 1\n  - None\n  - 3\n  value: float32[2]',
  ),
  'only empty metadata': ({'n': None, 'e': []}, 'w:\n  value: float32[2]'),
  'arrays by repr': (
    {'x': jnp.ones(2)},
    'w:\n  value: float32[2]\n  x: Array([1., 1.], dtype=float32)',
  ),
  'standard metadata only': ({'eager_sharding': True}, 'w: float32[2]'),
}


@pytest.mark.parametrize('name', sorted(METADATA_CASES))
def test_metadata_cell(name):
  metadata, expected = METADATA_CASES[name]
  table = nnx.tabulate(
    _Echo(**metadata), O1, console_kwargs=tabulate_models.WIDE
  )
  assert _column(table, 5).split('\n\n')[0] == expected


class _Attend(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((3, 3)))
    self.kid = nnx.data(None)

  def __call__(self, x):
    return x @ self.w[...]

  def attend(self, x):
    return x @ self.w[...].T


class _Uses(nnx.Module):
  def __init__(self):
    self.e = _Attend()
    self.e.kid = _Attend()

  def __call__(self, x):
    return self.e.attend(self.e(x)) + self.e.kid.attend(x)

  def other(self, x):
    return self.e.attend(x)


def _rows(table):
  return [
    line.split('│')[1].strip() + ' ' + line.split('│')[2].strip()
    for line in table.splitlines()
    if line.startswith('│') and line.split('│')[2].strip()
  ]


@pytest.mark.parametrize(
  'depth, method, expected',
  [
    (None, '__call__', [' _Uses', 'e _Attend', 'e/kid/attend _Attend']),
    (0, '__call__', [' _Uses']),
    (1, '__call__', [' _Uses', 'e _Attend']),
    (2, '__call__', [' _Uses', 'e _Attend']),
    (3, '__call__', [' _Uses', 'e _Attend', 'e/kid/attend _Attend']),
    (0, 'other', []),
    (1, 'other', ['other _Uses']),
    (2, 'other', ['other _Uses', 'e/attend _Attend']),
  ],
)
def test_depth_counts_the_method_name(depth, method, expected):
  table = nnx.tabulate(
    _Uses(),
    X23,
    depth=depth,
    method=method,
    console_kwargs=tabulate_models.WIDE,
  )
  assert _rows(table) == expected


@pytest.mark.parametrize(
  'key', ['title', 'show_header', 'show_lines', 'show_footer']
)
def test_table_kwargs_may_not_repeat_the_table_options(key):
  with pytest.raises(
    TypeError, match=f"multiple values for keyword argument '{key}'"
  ):
    nnx.tabulate(_Attend(), X23, table_kwargs={key: True})


def test_table_kwargs_keep_the_caption():
  table = nnx.tabulate(
    _Attend(),
    X23,
    table_kwargs={
      'caption': 'C',
      'caption_justify': 'left',
      'show_edge': False,
    },
    console_kwargs=tabulate_models.WIDE,
  )
  lines = [line.rstrip() for line in table.splitlines()]
  assert lines[-2:] == ['', 'Total Parameters: 9 (36 B)']
  assert 'C' not in lines


class _Dense(nnx.Module):
  def __init__(self, rngs):
    self.kernel = nnx.Param(jax.random.normal(rngs.params(), (3, 3)))
    self.bias = nnx.Param(jnp.zeros(3))

  def __call__(self, x):
    return x @ self.kernel[...] + self.bias[...][None]


class _Block(nnx.Module):
  def __init__(self, rngs):
    self.dense = _Dense(rngs)

  def __call__(self, x):
    return jax.nn.relu(self.dense(x))


class _Scanned(nnx.Module):
  def __init__(self, rngs):
    @nnx.split_rngs(splits=4)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def make(rngs):
      return _Block(rngs)

    self.blocks = make(rngs)

  def __call__(self, x):
    @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
    def step(block, x):
      return block(x)

    return step(self.blocks, x)


def test_calls_inside_transforms_are_rows():
  # The rows of the scanned blocks show one step's inputs and the stacked
  # Variables of the model.
  table = nnx.tabulate(
    _Scanned(nnx.Rngs(0)),
    X23,
    compute_flops=True,
    compute_vjp_flops=True,
    console_kwargs=tabulate_models.WIDE,
  )
  rows = [
    [cell.strip() for cell in line.split('│')[1:-1]]
    for line in table.splitlines()
    if line.startswith('│')
  ]
  assert rows[:3] == [
    ['', '_Scanned', 'float32[2,3]', 'float32[2,3]', '50', '141', '48 (192 B)'],
    [
      'blocks',
      '_Block',
      'float32[2,3]',
      'float32[2,3]',
      '48',
      '135',
      '48 (192 B)',
    ],
    [
      'blocks/dense',
      '_Dense',
      'float32[2,3]',
      'float32[2,3]',
      '42',
      '117',
      'bias: float32[4,3]',
    ],
  ]
  assert rows[3][6] == 'kernel: float32[4,3,3]'
