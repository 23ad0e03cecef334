"""Checks the floors of flax-nnx declared in docs/architecture.md.

  python tests/nnx_layers.py            # the check the lint session runs
  python tests/nnx_layers.py --figures  # the import graph's figures
  python tests/nnx_layers.py --update   # rewrite the known violations

Parses every module of the flax-nnx distribution (imports inside functions
included) and reports three kinds of violation:

- ``back-arrow A -> B``: module A imports B, whose floor is above A's;
- ``cycle A B ...``: modules that import each other in a circle (a
  strongly connected component of the import graph);
- ``function-import A -> B``: A imports B inside a function, and B is not
  an optional dependency (:data:`LAZY_ALLOWED`).

The ones that remain are listed in tests/nnx_layers_known.txt. A violation
not in that list fails the check, and so does an entry that no longer
occurs (a circle that got smaller counts as known, but its entry must be
rewritten). ``--update`` rewrites the list from the current violations
and refuses to when one of them is new (it writes the first list when
there is none).
"""

import argparse
import ast
import collections
import dataclasses
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / 'packages' / 'nnx' / 'src'
TABLE = ROOT / 'docs' / 'architecture.md'
TABLE_HEADING = '## Floors of flax-nnx'
KNOWN = pathlib.Path(__file__).resolve().parent / 'nnx_layers_known.txt'
# Imports a function may make: optional dependencies of flax-nnx (a module
# name or a package and its submodules).
LAZY_ALLOWED = ('treescope', 'rich', 'yaml', 'flax.linen')


@dataclasses.dataclass(frozen=True)
class Floor:
  """One row of the table: its rank, name and module patterns."""

  rank: int
  name: str
  patterns: tuple[str, ...]

  def holds(self, module: str) -> bool:
    for pattern in self.patterns:
      if pattern.endswith('.*'):
        base = pattern[:-2]
        if module == base or module.startswith(base + '.'):
          return True
      elif module == pattern:
        return True
    return False


@dataclasses.dataclass(frozen=True)
class Import:
  """An import statement of one module (``in_function``: made inside a
  function) resolved to the module it loads."""

  source: str
  target: str
  line: int
  in_function: bool


def read_floors(path=TABLE) -> list[Floor]:
  """The rows of the floor table of ``path``."""
  text = path.read_text()
  if TABLE_HEADING not in text:
    raise SystemExit(f'{path.name}: no "{TABLE_HEADING}" section')
  section = text.split(TABLE_HEADING, 1)[1].split('\n## ', 1)[0]
  floors = []
  for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if len(cells) < 3 or not cells[0].isdigit():
      continue
    patterns = tuple(
      p if p.startswith('flax.') else f'flax.nnx.{p}'
      for p in re.findall(r'`([^`]+)`', cells[2])
    )
    floors.append(Floor(int(cells[0]), cells[1], patterns))
  if [f.rank for f in floors] != list(range(len(floors))):
    raise SystemExit(f'{path.name}: the floors are not numbered 0, 1, ...')
  return floors


def modules() -> dict[str, pathlib.Path]:
  """The modules of the flax-nnx distribution, by dotted name."""
  found = {}
  for path in sorted(SRC.rglob('*.py')):
    parts = path.relative_to(SRC).with_suffix('').parts
    if parts[-1] == '__init__':
      parts = parts[:-1]
    found['.'.join(parts)] = path
  return found


def _enclosing_functions(tree):
  """The import nodes of ``tree`` made inside a function."""
  inside = set()

  def visit(node, in_function):
    for child in ast.iter_child_nodes(node):
      nested = in_function or isinstance(
        child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
      )
      if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
        inside.add(child)
      visit(child, nested)

  visit(tree, False)
  return inside


def imports_of(name, path, known) -> list[Import]:
  """The imports of module ``name``, each resolved to the longest module
  name of ``known`` it starts with (or the imported name itself)."""
  tree = ast.parse(path.read_text(), str(path))
  inside = _enclosing_functions(tree)
  package = name if path.name == '__init__.py' else name.rpartition('.')[0]
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ''
      if node.level:
        parts = package.split('.')[: len(package.split('.')) - node.level + 1]
        base = '.'.join(parts + ([node.module] if node.module else []))
      targets = [
        f'{base}.{alias.name}' if f'{base}.{alias.name}' in known else base
        for alias in node.names
      ]
    else:
      continue
    for target in targets:
      resolved = target
      while resolved not in known and '.' in resolved:
        resolved = resolved.rpartition('.')[0]
      found.append(
        Import(
          name,
          resolved if resolved in known else target,
          node.lineno,
          node in inside,
        )
      )
  return found


def _cycles(edges, nodes) -> list[frozenset]:
  """The strongly connected components of more than one module."""
  index, low, stack, on_stack, out = {}, {}, [], set(), []
  counter = iter(range(len(nodes) + 1))

  def connect(v):
    index[v] = low[v] = next(counter)
    stack.append(v)
    on_stack.add(v)
    for w in sorted(edges.get(v, ())):
      if w not in index:
        connect(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = set()
      while True:
        w = stack.pop()
        on_stack.discard(w)
        component.add(w)
        if w == v:
          break
      if len(component) > 1:
        out.append(frozenset(component))

  limit = sys.getrecursionlimit()
  sys.setrecursionlimit(max(limit, 10 * len(nodes)))
  try:
    for v in sorted(nodes):
      if v not in index:
        connect(v)
  finally:
    sys.setrecursionlimit(limit)
  return out


@dataclasses.dataclass
class Graph:
  """The import graph of flax-nnx and its violations."""

  floors: list[Floor]
  floor_of: dict[str, int]
  imports: list[Import]
  edges: dict[str, set]
  cycles: list[frozenset]
  unassigned: list[str]

  def back_arrows(self) -> set[str]:
    return {
      f'back-arrow {a} -> {b}'
      for a, targets in self.edges.items()
      for b in targets
      if self.floor_of[b] > self.floor_of[a]
    }

  def function_imports(self) -> set[str]:
    return {
      f'function-import {i.source} -> {i.target}'
      for i in self.imports
      if i.in_function
      and not any(
        i.target == lazy or i.target.startswith(lazy + '.')
        for lazy in LAZY_ALLOWED
      )
    }

  def cycle_entries(self) -> set[str]:
    return {'cycle ' + ' '.join(sorted(c)) for c in self.cycles}


def build(floors=None) -> Graph:
  floors = floors if floors is not None else read_floors()
  found = modules()
  floor_of, unassigned = {}, []
  for name in found:
    ranks = [f.rank for f in floors if f.holds(name)]
    if len(ranks) != 1:
      unassigned.append(name)
    else:
      floor_of[name] = ranks[0]
  imports = [i for n, p in found.items() for i in imports_of(n, p, found)]
  edges = collections.defaultdict(set)
  for i in imports:
    if i.target in found and i.target != i.source:
      edges[i.source].add(i.target)
  return Graph(
    floors, floor_of, imports, edges, _cycles(edges, found), unassigned
  )


def _read_known():
  if not KNOWN.exists():
    return set()
  return {
    line.strip()
    for line in KNOWN.read_text().splitlines()
    if line.strip() and not line.startswith('#')
  }


def _split(entries):
  cycles = {frozenset(e.split()[1:]) for e in entries if e.startswith('cycle ')}
  return cycles, {e for e in entries if not e.startswith('cycle ')}


def compare(graph, known):
  """``(new violations, entries that no longer occur)``."""
  known_cycles, known_rest = _split(known)
  rest = graph.back_arrows() | graph.function_imports()
  new = sorted(rest - known_rest)
  new += [
    'cycle ' + ' '.join(sorted(c))
    for c in graph.cycles
    if not any(c <= k for k in known_cycles)
  ]
  gone = sorted(known_rest - rest)
  gone += [
    'cycle ' + ' '.join(sorted(k))
    for k in known_cycles
    if k not in set(graph.cycles)
  ]
  return new, gone


def figures(graph) -> str:
  fn = [i for i in graph.imports if i.in_function]
  own_fn = [i for i in fn if i.target in graph.floor_of]
  lines = [
    f'floors: {len(graph.floors)}',
    f'modules: {len(graph.floor_of) + len(graph.unassigned)}',
    f'import arrows between modules: '
    f'{sum(len(t) for t in graph.edges.values())}',
    f'back-arrows: {len(graph.back_arrows())}',
    f'circles: {len(graph.cycles)} '
    f'(sizes {sorted((len(c) for c in graph.cycles), reverse=True)})',
    f'imports inside functions: {len(fn)} ({len(own_fn)} of flax-nnx '
    f'modules; {len(graph.function_imports())} module pairs not allowed)',
  ]
  return '\n'.join(lines)


HEADER = """\
# Violations of the floors of flax-nnx (docs/architecture.md) that remain.
# This list may only shrink; `python tests/nnx_layers.py --update`
# rewrites it from the current code.
"""


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--figures', action='store_true')
  parser.add_argument('--update', action='store_true')
  args = parser.parse_args(argv)
  graph = build()
  if args.figures:
    print(figures(graph))
    return 0
  if graph.unassigned:
    print(
      'Modules in no floor (or in several) of the table of '
      f'{TABLE.name}: ' + ', '.join(sorted(graph.unassigned))
    )
    return 1
  first_list = args.update and not KNOWN.exists()
  new, gone = compare(graph, _read_known())
  if new and not first_list:
    lines = {
      (i.source, i.target): i.line for i in graph.imports if i.in_function
    }
    print(f'{len(new)} import(s) against the floors of flax-nnx:')
    for entry in new:
      where = ''
      if entry.startswith('function-import '):
        _, a, _, b = entry.split()
        where = f' (line {lines[a, b]}: import at the top of the module)'
      print(f'  {entry}{where}')
    return 1
  if args.update:
    current = sorted(
      graph.back_arrows() | graph.function_imports() | graph.cycle_entries()
    )
    KNOWN.write_text(HEADER + ''.join(f'{e}\n' for e in current))
    print(f'{KNOWN.name}: {len(current)} entries')
    return 0
  if gone:
    print(
      f'{len(gone)} entries of {KNOWN.name} no longer occur; remove them '
      '(`python tests/nnx_layers.py --update`):'
    )
    for entry in gone:
      print(f'  {entry}')
    return 1
  print(f'flax-nnx floors: ok ({figures(graph).splitlines()[3]})')
  return 0


if __name__ == '__main__':
  sys.exit(main())
