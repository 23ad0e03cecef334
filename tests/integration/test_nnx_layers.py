"""tests/nnx_layers.py: the floors of flax-nnx and the violations it finds."""

import importlib.util
import pathlib
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
  'nnx_layers', ROOT / 'tests' / 'nnx_layers.py'
)
layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layers)


def test_every_module_has_one_floor_and_the_list_is_current():
  graph = layers.build()
  assert graph.unassigned == []
  assert layers.compare(graph, layers._read_known()) == ([], [])


def test_table_rows_become_floors(tmp_path):
  page = tmp_path / 'page.md'
  page.write_text(
    textwrap.dedent("""\
      ## Floors of flax-nnx

      | floor | name | modules | concern |
      |---|---|---|---|
      | 0 | low | `ids`, `bridge.*` | a |
      | 1 | top | `flax.nnx` | b |

      ## Next
      | 5 | not | `x` | c |
      """)
  )
  low, top = layers.read_floors(page)
  assert low.holds('flax.nnx.ids') and low.holds('flax.nnx.bridge.module')
  assert low.holds('flax.nnx.bridge') and not low.holds('flax.nnx.idsx')
  assert top.patterns == ('flax.nnx',) and top.rank == 1


def test_imports_inside_functions_and_relative_imports(tmp_path):
  module = tmp_path / 'mod.py'
  module.write_text(
    textwrap.dedent("""\
      from flax.nnx import graphlib
      from . import statelib

      def f():
        import treescope
        from flax.nnx.module import Module
        return lambda: Module
      """)
  )
  known = {'flax.nnx.graphlib', 'flax.nnx.statelib', 'flax.nnx.module'}
  found = layers.imports_of('flax.nnx.mod', module, known)
  assert [(i.target, i.in_function) for i in found] == [
    ('flax.nnx.graphlib', False),
    ('flax.nnx.statelib', False),
    ('treescope', True),
    ('flax.nnx.module', True),
  ]


def test_back_arrows_circles_and_function_imports_are_reported():
  floors = [
    layers.Floor(0, 'low', ('flax.nnx.a',)),
    layers.Floor(1, 'high', ('flax.nnx.b', 'flax.nnx.c')),
  ]
  imports = [
    layers.Import('flax.nnx.a', 'flax.nnx.b', 1, False),
    layers.Import('flax.nnx.b', 'flax.nnx.c', 1, False),
    layers.Import('flax.nnx.c', 'flax.nnx.b', 3, True),
    layers.Import('flax.nnx.c', 'treescope', 4, True),
  ]
  edges = {'flax.nnx.a': {'flax.nnx.b'}, 'flax.nnx.b': {'flax.nnx.c'}}
  edges['flax.nnx.c'] = {'flax.nnx.b'}
  nodes = ['flax.nnx.a', 'flax.nnx.b', 'flax.nnx.c']
  graph = layers.Graph(
    floors,
    {'flax.nnx.a': 0, 'flax.nnx.b': 1, 'flax.nnx.c': 1},
    imports,
    edges,
    layers._cycles(edges, nodes),
    [],
  )
  assert graph.back_arrows() == {'back-arrow flax.nnx.a -> flax.nnx.b'}
  assert graph.function_imports() == {
    'function-import flax.nnx.c -> flax.nnx.b'
  }
  assert graph.cycle_entries() == {'cycle flax.nnx.b flax.nnx.c'}
  known = graph.back_arrows() | graph.cycle_entries()
  new, gone = layers.compare(graph, known)
  assert new == ['function-import flax.nnx.c -> flax.nnx.b'] and gone == []
  # a smaller circle is known, but its entry must be rewritten
  bigger = {'cycle flax.nnx.a flax.nnx.b flax.nnx.c'}
  new, gone = layers.compare(graph, graph.back_arrows() | bigger)
  assert 'cycle flax.nnx.b flax.nnx.c' not in new
  assert gone == ['cycle flax.nnx.a flax.nnx.b flax.nnx.c']
