"""Checks the import rules between the distributions of this repository.

  python tests/import_scan.py

Parses every module under ``packages/*/src`` (imports inside functions
included, and ``'module:Name'`` strings such as plugin export records) and
fails when:

- a module imports another distribution of this repo that its
  ``pyproject.toml`` does not declare (as a dependency or in an extra);
- a module reaches a private module (a ``_name`` path component) of another
  distribution;
- a module imports a third-party library its distribution does not declare.

Alias modules that load another distribution's module through
``flax.plugins.require('module', 'distribution')`` are the sanctioned way to
keep Flax's import paths, and are not imports. Nor are the strings of the
first-party export table (``flax/plugins/_catalog.py``): each record is
loaded on behalf of the distribution it names, through the plugin registry.
"""

import ast
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.name for p in (ROOT / 'packages').iterdir() if p.is_dir())
# Third-party import names and the distribution that provides them. jax
# brings numpy, ml_dtypes and opt_einsum, so declaring jax covers those.
THIRD_PARTY = {
  'jax': 'jax',
  'jaxlib': 'jax',
  'numpy': 'jax',
  'ml_dtypes': 'jax',
  'opt_einsum': 'jax',
  'pluggy': 'pluggy',
  'msgpack': 'msgpack',
  'optax': 'optax',
  'orbax': 'orbax-checkpoint',
  'tensorstore': 'orbax-checkpoint',
  'treescope': 'treescope',
  'rich': 'rich',
  'tqdm': 'tqdm',
  'yaml': 'pyyaml',
  'typing_extensions': 'typing-extensions',
  'etils': 'orbax-checkpoint',
}
CATALOG = 'flax.plugins._catalog'
MODULE_STRING = re.compile(r'^(flax(?:\.\w+)+):\w+$')


def _name(req):
  return re.split(r'[<>=!~\[; ]', req.strip(), maxsplit=1)[0].lower()


def declared(package):
  """Distribution names ``package`` may import, with where they come from."""
  project = tomllib.loads(
    (ROOT / 'packages' / package / 'pyproject.toml').read_text()
  )['project']
  names = {_name(r) for r in project.get('dependencies', [])}
  for extra, reqs in project.get('optional-dependencies', {}).items():
    if extra != 'test':  # what tests need is not a runtime dependency
      names |= {_name(r) for r in reqs}
  names.add(f'flax-{package}')
  return names


def owner_index():
  """Maps each module path of the repo to the package that ships it."""
  owners = {}
  for package in PACKAGES:
    src = ROOT / 'packages' / package / 'src'
    for path in src.rglob('*.py'):
      parts = list(path.relative_to(src).with_suffix('').parts)
      if parts[-1] == '__init__':
        parts.pop()
      owners['.'.join(parts)] = package
  return owners


def owner_of(module, owners):
  parts = module.split('.')
  while parts:
    found = owners.get('.'.join(parts))
    if found:
      return found, '.'.join(parts)
    parts.pop()
  return None, None


def imports_of(path, module):
  """(line, imported module) pairs of a source file."""
  tree = ast.parse(path.read_text(), str(path))
  is_package = path.name == '__init__.py'
  base = module.split('.') if is_package else module.split('.')[:-1]
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      found += [(node.lineno, a.name) for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      if node.level:
        anchor = base[: len(base) - (node.level - 1)]
        target = '.'.join(anchor + ([node.module] if node.module else []))
      else:
        target = node.module
      found.append((node.lineno, target))
      for a in node.names:  # `from flax.core import scope` imports a module
        found.append((node.lineno, f'{target}.{a.name}'))
    elif module == CATALOG:
      continue
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
      m = MODULE_STRING.match(node.value)
      if m:
        found.append((node.lineno, m.group(1)))
  return found


def check():
  owners = owner_index()
  problems = {}
  for package in PACKAGES:
    allowed = declared(package)
    src = ROOT / 'packages' / package / 'src'
    for path in sorted(src.rglob('*.py')):
      parts = list(path.relative_to(src).with_suffix('').parts)
      if parts[-1] == '__init__':
        parts.pop()
      module = '.'.join(parts)
      where = path.relative_to(ROOT)
      for line, target in imports_of(path, module):
        top = target.split('.')[0]
        if top == 'flax':
          other, resolved = owner_of(target, owners)
          if other is None or other == package:
            continue
          if f'flax-{other}' not in allowed:
            problems[f'{where}:{line}:{other}'] = (
              f'{where}:{line}: imports {resolved} from flax-{other}, which '
              f'flax-{package} does not declare'
            )
          private = [p for p in resolved.split('.') if p.startswith('_')]
          if private and not resolved.startswith('flax._plugins'):
            problems[f'{where}:{line}:{resolved}'] = (
              f'{where}:{line}: reaches the private module {resolved} of '
              f'flax-{other}'
            )
        elif top in THIRD_PARTY and THIRD_PARTY[top] not in allowed:
          if THIRD_PARTY[top] == 'jax' and 'flax-core' in allowed | {
            f'flax-{package}'
          }:
            continue  # every package depends on jax through flax-core
          problems[f'{where}:{line}:{top}'] = (
            f'{where}:{line}: imports {top}, but flax-{package} does not '
            f'declare {THIRD_PARTY[top]}'
          )
  return list(problems.values())


def main():
  problems = check()
  for p in problems:
    print(p)
  print(f'import scan: {len(problems)} problems in {len(PACKAGES)} packages')
  return 1 if problems else 0


if __name__ == '__main__':
  sys.exit(main())
