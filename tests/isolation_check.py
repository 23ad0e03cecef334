"""Checks one installed package in an environment that holds only it.

Run by ``nox -s isolation`` as ``python isolation_check.py <package>
'<json list of sibling packages installed with it>'``.
"""

import importlib
import json
import sys
import warnings

PACKAGES = (
  'core',
  'serialization',
  'spmd',
  'linen',
  'nnx',
  'layers',
  'training',
)
# Which name each package's import is checked under.
IMPORTS = {
  'core': [
    'flax',
    'flax.core',
    'flax.struct',
    'flax.traverse_util',
    'flax.errors',
    'flax.plugins',
  ],
  'training': ['flax.training', 'flax.jax_utils'],
}


def main():
  package = sys.argv[1]
  installed = {package, 'core', *json.loads(sys.argv[2])}
  warnings.simplefilter('error')
  for name in IMPORTS.get(package, [f'flax.{package}']):
    importlib.import_module(name)
  if package == 'nnx':
    from flax import nnx  # noqa: F401

  loaded = set(sys.modules)
  forbidden = [f'flax.{p}' for p in PACKAGES if p not in installed]
  forbidden += ['orbax', 'orbax.checkpoint']
  if 'training' not in installed:
    forbidden.append('optax')
  if 'serialization' not in installed:
    forbidden.append('msgpack')
  if package in ('nnx', 'layers', 'core', 'spmd'):
    forbidden.append('flax.linen')
  if package in ('linen', 'layers', 'core', 'spmd'):
    forbidden.append('flax.nnx')
  bad = sorted(set(forbidden) & loaded)
  assert not bad, f'importing flax-{package} imported {bad}'

  if package == 'nnx' and 'linen' not in installed:
    # The Linen <-> NNX bridge needs the `bridge` extra.
    try:
      importlib.import_module('flax.nnx.bridge')
    except ModuleNotFoundError as e:
      assert 'flax-nnx[bridge]' in str(e), str(e)
    else:
      raise AssertionError('flax.nnx.bridge imported without flax-linen')

  for missing in sorted(set(PACKAGES) - installed):
    try:
      importlib.import_module(f'flax.{missing}')
    except ModuleNotFoundError as e:
      assert f'flax-{missing}' in str(e), str(e)
    else:
      raise AssertionError(f'flax.{missing} imported without flax-{missing}')

  from flax import plugins

  failures = plugins.registry().failures()
  assert not failures, [f.error for f in failures]
  if package in ('nnx', 'linen') and 'layers' not in installed:
    namespace = importlib.import_module(f'flax.{package}')
    layer = 'Linear' if package == 'nnx' else 'Dense'
    try:
      getattr(namespace, layer)
    except AttributeError as e:
      assert 'flax-layers' in str(e), str(e)
    else:
      raise AssertionError(f'{layer} resolved without flax-layers')
  print(f'flax-{package}: isolated import OK ({len(loaded)} modules)')


if __name__ == '__main__':
  main()
