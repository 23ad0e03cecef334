"""Runs the docstring examples of one installed distribution of this repo.

  python tests/run_doctests.py core [--strict] [-v]

Collects every module the distribution ``flax-<package>`` ships (from its
installed file list, or from ``packages/<package>/src`` for an editable
install) and runs the ``>>>`` examples of their docstrings with
``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``. A module that needs an optional
sibling distribution or library that is not installed is reported and left
out; ``--strict`` (used where everything is installed) fails on those too.
Exits 1 when an example fails.
"""

import argparse
import doctest
import importlib
import importlib.metadata
import os
import pathlib
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def module_names(package):
  """Dotted names of the modules ``flax-<package>`` ships."""
  dist = importlib.metadata.distribution(f'flax-{package}')
  files = [
    pathlib.PurePosixPath(str(f))
    for f in dist.files or ()
    if str(f).startswith('flax/') and str(f).endswith('.py')
  ]
  if not files:  # an editable install: read the source tree
    src = ROOT / 'packages' / package / 'src'
    files = [
      pathlib.PurePosixPath(p.relative_to(src).as_posix())
      for p in src.rglob('*.py')
    ]
  names = []
  for f in sorted(files):
    parts = list(f.with_suffix('').parts)
    if parts[-1] == '__main__':
      continue
    if parts[-1] == '__init__':
      parts.pop()
    names.append('.'.join(parts))
  return names


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('package')
  ap.add_argument('--strict', action='store_true')
  ap.add_argument('-v', '--verbose', action='store_true')
  a = ap.parse_args(argv)
  os.environ.setdefault('JAX_PLATFORMS', 'cpu')
  warnings.simplefilter('error')
  finder = doctest.DocTestFinder(exclude_empty=True)
  runner = doctest.DocTestRunner(optionflags=FLAGS, verbose=False)
  left_out, examples = [], 0
  for name in module_names(a.package):
    try:
      module = importlib.import_module(name)
    except ModuleNotFoundError as e:
      left_out.append(f'{name} (needs {e.name})')
      continue
    for test in finder.find(module, name):
      if test.examples:
        examples += len(test.examples)
        runner.run(test)
  result = runner.summarize(verbose=False)
  for item in left_out:
    print(f'doctests: left out {item}')
  print(
    f'doctests of flax-{a.package}: {examples} examples, '
    f'{result.failed} failed, {len(left_out)} modules left out'
  )
  if result.failed or (a.strict and left_out):
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main())
