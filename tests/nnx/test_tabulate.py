"""nnx.tabulate prints the tables of Flax 0.12.8 (data/tabulate/*.txt).

Tables of models made of NNX layers: tests/layers/nnx/test_nnx_tabulate.py.
"""

import pathlib
import sys

import numpy as np
import pytest
import yaml

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
