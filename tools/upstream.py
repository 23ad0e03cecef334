"""Flax 0.12.8's own test suite, run against this repository's packages.

  python tools/upstream.py run [--workers N] [-- PYTEST_ARGS...]
  python tools/upstream.py baseline --python PYTHON [--workers N]

``run`` (what ``nox -s upstream`` calls, with the seven packages and the
suite's test dependencies installed in its virtualenv) downloads the source
distribution of Flax 0.12.8 once (cached under ``.nox/_upstream/``), extracts
its ``tests/`` folder and the pytest configuration of its ``pyproject.toml``,
and runs the suite with Flax's CI settings: every warning is an error but
those its configuration ignores, ``JAX_NUMPY_RANK_PROMOTION=raise``,
``FLAX_PROFILE=1`` and 4 fake CPU devices.

The results are compared with three files under ``tests/upstream/``:

- ``baseline.txt``: the tests that pass on Flax 0.12.8 itself in the same
  environment, written by ``baseline`` (run the same suite under PYTHON, a
  virtualenv holding ``flax==0.12.8``, pytest and the test dependencies);
- ``exclusions.txt``: tests that cannot run in this environment (missing
  heavy dependencies), each with its reason; neither run excludes them;
- ``known_failures.txt``: baseline tests that still fail here, each with a
  short reason. The list may only shrink: the run fails when a baseline
  test outside it fails, and when a test in it passes (``--prune`` removes
  those entries).

PYTEST_ARGS (a file, ``-k``, ``--tb=short``...) run a subset; only the tests
that ran are compared then.
"""

import argparse
import collections
import dataclasses
import hashlib
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLAX_VERSION = '0.12.8'
# sha256 of flax-0.12.8.tar.gz as published on the package index.
SDIST_SHA256 = (
  '1bb438775b967a3f1f42b9c3d4ddf1d2883cd6406589f9cecdc244634036bdc4'
)
SDIST = f'flax-{FLAX_VERSION}.tar.gz'
CACHE = ROOT / '.nox' / '_upstream'
LISTS = ROOT / 'tests' / 'upstream'
BASELINE = LISTS / 'baseline.txt'
EXCLUSIONS = LISTS / 'exclusions.txt'
KNOWN_FAILURES = LISTS / 'known_failures.txt'
# The environment of Flax's CI (tests/run_all_tests.sh of the sdist).
SUITE_ENV = {
  'JAX_NUMPY_RANK_PROMOTION': 'raise',
  'FLAX_PROFILE': '1',
  'XLA_FLAGS': '--xla_force_host_platform_device_count=4',
  'JAX_PLATFORMS': 'cpu',
}
# Distributions whose versions the baseline records.
RECORDED = (
  'jax',
  'jaxlib',
  'numpy',
  'optax',
  'orbax-checkpoint',
  'msgpack',
  'pytest',
  'absl-py',
  'cloudpickle',
)
VERSIONS_CODE = (
  'import importlib.metadata as m, json, platform; '
  f'print(json.dumps({{"python": platform.python_version(), '
  f'**{{d: m.version(d) for d in {RECORDED!r}}}}}))'
)


# ---------------------------------------------------------------------------
# The suite: download, extract.


def _sha256(path):
  digest = hashlib.sha256()
  with open(path, 'rb') as f:
    for block in iter(lambda: f.read(1 << 20), b''):
      digest.update(block)
  return digest.hexdigest()


def _download(cache):
  """The sdist, downloaded once into ``cache`` and checked."""
  tarball = cache / SDIST
  if tarball.exists() and _sha256(tarball) == SDIST_SHA256:
    return tarball
  if importlib.util.find_spec('pip') is None:
    raise SystemExit(
      f'pip is needed to download {SDIST}: install it in {sys.prefix}.'
    )
  cache.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory(dir=cache) as tmp:
    print(f'Downloading the source distribution of flax=={FLAX_VERSION}')
    subprocess.run(
      [
        sys.executable,
        '-m',
        'pip',
        'download',
        '-q',
        f'flax=={FLAX_VERSION}',
        '--no-binary',
        ':all:',
        '--no-deps',
        '--dest',
        tmp,
      ],
      check=True,
    )
    got = pathlib.Path(tmp) / SDIST
    if _sha256(got) != SDIST_SHA256:
      raise SystemExit(f'{SDIST} does not have the expected sha256')
    got.replace(tarball)
  return tarball


def _ini_lines(options):
  """``[tool.pytest.ini_options]`` as the lines of a ``pytest.ini``."""
  lines = ['[pytest]']
  for key, value in options.items():
    values = value if isinstance(value, list) else [value]
    if isinstance(value, list):
      lines.append(f'{key} =')
      lines += [f'  {v}' for v in values]
    else:
      lines.append(f'{key} = {value}')
    if any('\n' in str(v) for v in values):
      raise SystemExit(f'pytest option {key} spans lines')
  return lines


def fetch(cache=CACHE):
  """A folder holding the sdist's ``tests/`` and its pytest configuration.

  Nothing else of the source distribution is extracted.
  """
  suite = cache / f'flax-{FLAX_VERSION}'
  stamp = suite / '.sdist-sha256'
  if stamp.exists() and stamp.read_text().strip() == SDIST_SHA256:
    return suite
  tarball = _download(cache)
  prefix = f'flax-{FLAX_VERSION}/'
  staging = pathlib.Path(tempfile.mkdtemp(dir=cache))
  try:
    with tarfile.open(tarball) as tar:
      members = [
        m for m in tar.getmembers() if m.name.startswith(f'{prefix}tests/')
      ]
      tar.extractall(staging, members=members, filter='data')
      config = tomllib.load(tar.extractfile(f'{prefix}pyproject.toml'))
    options = config['tool']['pytest']['ini_options']
    target = staging / prefix
    (target / 'pytest.ini').write_text('\n'.join(_ini_lines(options)) + '\n')
    (target / '.sdist-sha256').write_text(SDIST_SHA256 + '\n')
    shutil.rmtree(suite, ignore_errors=True)
    target.rename(suite)
  finally:
    shutil.rmtree(staging, ignore_errors=True)
  return suite


# ---------------------------------------------------------------------------
# Running it: a pytest child process that records every test's outcome.


class Recorder:
  """A pytest plugin: the outcome of each test and each collection error."""

  def __init__(self, output):
    self.output = output
    self.tests = {}
    self.errors = {}

  def pytest_runtest_logreport(self, report):
    entry = self.tests.setdefault(
      report.nodeid, {'outcome': None, 'message': '', 'seconds': 0.0}
    )
    entry['seconds'] = round(entry['seconds'] + report.duration, 3)
    if entry['outcome'] == 'failed':
      return
    if report.failed:
      entry['outcome'] = 'failed'
      entry['message'] = _message(report)
    elif report.skipped:
      entry['outcome'] = 'skipped'
      entry['message'] = _message(report)
    elif report.when == 'call' and entry['outcome'] is None:
      entry['outcome'] = 'passed'

  def pytest_collectreport(self, report):
    if report.failed:
      self.errors[report.nodeid] = _message(report)

  def pytest_sessionfinish(self, session):
    for entry in self.tests.values():
      if entry['outcome'] is None:  # interrupted before its call
        entry['outcome'] = 'failed'
    data = {'tests': self.tests, 'errors': self.errors}
    pathlib.Path(self.output).write_text(json.dumps(data, indent=1))


def _message(report):
  """The one-line cause of a failed or skipped report."""
  longrepr = report.longrepr
  if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
    text = str(longrepr[-1])
  elif getattr(longrepr, 'reprcrash', None) is not None:
    text = longrepr.reprcrash.message
  else:  # a traceback as text (collection errors): its last error line
    text = str(longrepr or '')
    errors = [
      line[1:].strip() for line in text.splitlines() if line[:2] == 'E '
    ]
    text = errors[-1] if errors else (text.strip().splitlines() or [''])[-1]
  lines = [line for line in text.strip().splitlines() if line.strip()]
  if report.failed and report.when != 'call':
    lines[:0] = [f'({report.when})']
  return ' '.join(lines[:2])[:300]


def _child(argv):
  """``_pytest OUTPUT PYTEST_ARGS...``: runs pytest, records its results."""
  output, *args = argv
  return pytest.main(args, plugins=[Recorder(output)])


def run_suite(python, suite, workers, extra=()):
  """Runs the suite under ``python``; ``{'tests': ..., 'errors': ...}``."""
  args = [
    '-c',
    str(suite / 'pytest.ini'),
    '--rootdir',
    str(suite),
    '-p',
    'no:cacheprovider',
    '-q',
    '--tb=no',
    '-o',
    'console_output_style=count',
  ]
  if workers > 1:
    args += ['-n', str(workers)]
  for test in _read_list(EXCLUSIONS):
    args += ['--deselect' if '::' in test else '--ignore', test]
  args += list(extra) or ['tests']
  env = {**os.environ, **SUITE_ENV}
  env.pop('PYTHONPATH', None)
  with tempfile.TemporaryDirectory() as tmp:
    output = pathlib.Path(tmp) / 'results.json'
    command = [python, str(pathlib.Path(__file__).resolve()), '_pytest']
    subprocess.run([*command, str(output), *args], cwd=suite, env=env)
    if not output.exists():
      raise SystemExit('The suite did not finish: no results were written.')
    return json.loads(output.read_text())


# ---------------------------------------------------------------------------
# The lists under tests/upstream/.


def _read_list(path):
  """``{test id: reason}`` of a list file (``ID  # reason`` lines)."""
  entries = {}
  if not path.exists():
    return entries
  for number, line in enumerate(path.read_text().splitlines(), 1):
    if not line.strip() or line.lstrip().startswith('#'):
      continue
    test, _, reason = line.partition(' # ')
    if not reason.strip():
      raise SystemExit(f'{path.name}:{number}: {test.strip()} has no reason')
    entries[test.strip()] = reason.strip()
  return entries


def _read_baseline():
  tests, versions = [], {}
  for line in BASELINE.read_text().splitlines():
    if line.startswith('# versions: '):
      versions = json.loads(line[len('# versions: ') :])
    elif line.strip() and not line.startswith('#'):
      tests.append(line.strip())
  return tests, versions


def _file(test):
  return test.split('::')[0]


def _versions(python):
  out = subprocess.run(
    [python, '-c', VERSIONS_CODE], capture_output=True, text=True, check=True
  ).stdout
  return json.loads(out)


def baseline(args):
  suite = fetch()
  results = run_suite(args.python, suite, args.workers)
  passed = sorted(
    t for t, e in results['tests'].items() if e['outcome'] == 'passed'
  )
  versions = _versions(args.python)
  header = [
    f"# The tests of Flax {FLAX_VERSION}'s own suite (tests/ of its source",
    '# distribution) that pass on Flax itself, in the environment below.',
    '# Written by `python tools/upstream.py baseline --python PYTHON`.',
    f'# versions: {json.dumps(versions, sort_keys=True)}',
  ]
  BASELINE.write_text('\n'.join([*header, *passed]) + '\n')
  others = collections.Counter(e['outcome'] for e in results['tests'].values())
  print(f'{len(passed)} tests pass on Flax {FLAX_VERSION}: {dict(others)}')
  for path, message in sorted(results['errors'].items()):
    print(f'collection error: {path}: {message}')
  return 0


# ---------------------------------------------------------------------------
# Comparing.


@dataclasses.dataclass
class Comparison:
  """How the project's run compares with the baseline and the lists."""

  compared: list
  passed: set
  new_failures: dict
  fixed: list
  stale: list


def compare(results, expected, known, subset):
  """Matches the project's results against the baseline's tests."""
  tests, errors = results['tests'], results['errors']
  broken = set(errors)
  compared = [
    t for t in expected if t in tests or not subset or _file(t) in broken
  ]
  passed = {t for t in compared if tests.get(t, {}).get('outcome') == 'passed'}
  new_failures = {}
  for test in compared:
    if test in passed or test in known:
      continue
    entry = tests.get(test)
    if entry is None:
      message = errors.get(_file(test), 'did not run')
      new_failures[test] = f'not run: {message}'
    else:
      new_failures[test] = f'{entry["outcome"]}: {entry["message"]}'
  fixed = [t for t in known if t in passed]
  expected_set = set(expected)
  stale = [t for t in known if t not in expected_set]
  return Comparison(compared, passed, new_failures, fixed, stale)


def _table(comparison, known):
  by_file = collections.defaultdict(lambda: [0, 0, 0])
  for test in comparison.compared:
    row = by_file[_file(test)]
    row[1] += 1
    row[0] += test in comparison.passed
    row[2] += test in known and test not in comparison.passed
  width = max([len(f) for f in by_file] + [10])
  lines = [f'{"file":<{width}}  project / Flax {FLAX_VERSION}  known failures']
  for path in sorted(by_file):
    ok, total, listed = by_file[path]
    lines.append(f'{path:<{width}}  {ok:>7} / {total:<11}  {listed or ""}')
  ok = len(comparison.passed)
  total = len(comparison.compared)
  share = f'{100 * ok / total:.1f}%' if total else '-'
  lines.append(f'{"total":<{width}}  {ok:>7} / {total:<11}  ({share})')
  return lines


def _prune(fixed):
  """Removes the entries of ``fixed`` from known_failures.txt."""
  gone = set(fixed)
  kept = []
  for line in KNOWN_FAILURES.read_text().splitlines():
    test = line.partition(' # ')[0].strip()
    if not line.lstrip().startswith('#') and test in gone:
      continue
    kept.append(line)
  # Drop file headers left without entries.
  out = []
  for i, line in enumerate(kept):
    nxt = kept[i + 1] if i + 1 < len(kept) else ''
    if line.startswith('# tests/') and (not nxt or nxt.startswith('#')):
      continue
    out.append(line)
  KNOWN_FAILURES.write_text('\n'.join(out).rstrip('\n') + '\n')


def run(args):
  suite = fetch()
  expected, versions = _read_baseline()
  current = _versions(sys.executable)
  changed = {
    d: (v, current.get(d)) for d, v in versions.items() if current.get(d) != v
  }
  if changed:
    print(
      'Note: the baseline was made with other versions: '
      + ', '.join(f'{d} {a} (now {b})' for d, (a, b) in changed.items())
    )
  known = _read_list(KNOWN_FAILURES)
  results = run_suite(sys.executable, suite, args.workers, args.pytest_args)
  subset = bool(args.pytest_args)
  comparison = compare(results, expected, known, subset)
  print('\n'.join(_table(comparison, known)))
  extra = sorted(
    t
    for t, e in results['tests'].items()
    if e['outcome'] == 'passed' and t not in set(expected)
  )
  if extra:
    print(f'{len(extra)} tests pass here that do not pass on Flax itself.')
  for path, message in sorted(results['errors'].items()):
    print(f'Collection error: {path}: {message}')
  status = 0
  if comparison.new_failures:
    status = 1
    print(
      f'\n{len(comparison.new_failures)} tests that pass on Flax '
      f'{FLAX_VERSION} fail here (not in {KNOWN_FAILURES.name}):'
    )
    for test, message in sorted(comparison.new_failures.items()):
      print(f'  {test}\n      {message}')
    print(
      'Rerun one with `nox -s upstream -- TEST_ID --tb=short` to see '
      'its traceback.'
    )
  if comparison.fixed:
    if args.prune:
      _prune(comparison.fixed)
      print(f'\nRemoved {len(comparison.fixed)} passing tests from the list.')
    else:
      status = 1
      print(
        f'\n{len(comparison.fixed)} tests of {KNOWN_FAILURES.name} pass now: '
        'remove them from the list (`nox -s upstream -- --prune` does):'
      )
      for test in comparison.fixed:
        print(f'  {test}')
  if comparison.stale:
    status = 1
    print(
      f'\n{len(comparison.stale)} tests of {KNOWN_FAILURES.name} are not '
      f'baseline tests: remove them from the list:'
    )
    for test in comparison.stale:
      print(f'  {test}')
  return status


def _own_options(argv):
  """Splits ``run``'s arguments into its own options and pytest's."""
  own, rest = [], []
  args = iter(argv)
  for arg in args:
    if arg == '--prune' or arg.startswith('--workers='):
      own.append(arg)
    elif arg == '--workers':
      own += [arg, next(args, '')]
    else:
      rest.append(arg)
  return own, rest


def main(argv):
  if argv[:1] == ['_pytest']:
    return _child(argv[1:])
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  commands = parser.add_subparsers(dest='command', required=True)
  for name in ('run', 'baseline'):
    command = commands.add_parser(name)
    command.add_argument(
      '--workers',
      type=int,
      default=min(os.cpu_count() or 1, 2),
      help='pytest-xdist workers (1: none)',
    )
  commands.choices['run'].add_argument(
    '--prune',
    action='store_true',
    help='remove the tests that pass now from known_failures.txt',
  )
  commands.choices['baseline'].add_argument(
    '--python', required=True, help='a Python with flax==0.12.8 installed'
  )
  pytest_args = []
  if argv[:1] == ['run']:
    own, pytest_args = _own_options(argv[1:])
    argv = ['run', *own]
  args = parser.parse_args(argv)
  args.pytest_args = pytest_args
  return {'run': run, 'baseline': baseline}[args.command](args)


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
