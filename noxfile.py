"""Test matrix, packaging checks and benchmarks of the modular Flax monorepo.

``nox`` runs the whole matrix; ``nox -l --json`` lists the sessions so that a
CI matrix can be generated from it.
"""

import hashlib
import json
import os
import pathlib
import shutil
import sys
import tomllib

import nox
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = pathlib.Path(__file__).parent
PACKAGES = (
  'core',
  'serialization',
  'spmd',
  'linen',
  'nnx',
  'layers',
  'training',
)
TEST_TOOLS = ('pytest>=8',)

nox.options.default_venv_backend = 'uv|virtualenv'
nox.options.error_on_missing_interpreters = True

# The matrix starts hundreds of interpreters (pytest, doctest runs, scenario
# forks, demo and multihost processes). With PYTHONDONTWRITEBYTECODE set, as
# some containers do, each of them compiled jax, numpy and Flax from source
# again (about 2 s of CPU per `import jax, flax`); the sessions' venvs and
# the repository's .gitignored __pycache__ folders keep the bytecode instead.
os.environ.pop('PYTHONDONTWRITEBYTECODE', None)


def _parallel_sessions():
  """One session per CPU, at most one per 4 GiB of memory."""
  try:
    memory = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
  except (ValueError, OSError, AttributeError):
    return 1
  return max(1, min(os.cpu_count() or 1, memory // 2**32))


# Sessions run side by side (`nox -j 1` runs them one at a time); each
# session's output is printed when it finishes.
if hasattr(nox.options, 'parallel'):  # nox releases with --parallel
  nox.options.parallel = _parallel_sessions()
  nox.options.allow_parallel = True
# The longest sessions first, so that the short ones fill in beside them;
# tests-layers after integration and multihost, so that it can load from the
# shared XLA cache the layer programs conformance has compiled by then (its
# lowest-versions twin, the longest of those, beside it).
nox.options.sessions = [
  'upstream',
  'conformance',
  'integration',
  'multihost',
  'tests-layers',
  'tests-layers-lowest',
  *(f'tests-{p}' for p in PACKAGES if p != 'layers'),
  'tests-nnx-bridge',
  *(f'tests-{p}-lowest' for p in PACKAGES if p != 'layers'),
  'downstream',
  'plugins',
  'plugin-safetensors',
  'isolation',
  'wheels',
  'lint',
]


def _project(package):
  path = ROOT / 'packages' / package / 'pyproject.toml'
  return tomllib.loads(path.read_text())['project']


def _sibling(requirement):
  """``'flax-core>=0.12'`` -> ``'core'``; None for other requirements."""
  name = requirement.split(';')[0].strip()
  for sep in '<>=!~[ ':
    name = name.split(sep)[0]
  if name.startswith('flax-') and name[5:] in PACKAGES:
    return name[5:]
  return None


def siblings(package, extras=()):
  """Sibling packages that ``package`` (with ``extras``) needs, transitively.

  Only the root package's extras count; siblings bring their hard
  dependencies.
  """
  project = _project(package)
  requirements = list(project.get('dependencies', []))
  for extra in extras:
    requirements += project.get('optional-dependencies', {}).get(extra, [])
  found = []
  for req in requirements:
    sib = _sibling(req)
    if sib and sib not in found and sib != package:
      found.append(sib)
      found += [s for s in siblings(sib) if s not in found]
  return [p for p in PACKAGES if p in found]


# Wheels of our packages, built once per source state and shared by every
# session (and by later runs while the sources are unchanged).
WHEELHOUSE = ROOT / '.nox' / '_wheels'
_SOURCE_PARTS = ('src', 'pyproject.toml', 'README.md')
_SKIP_DIRS = {'__pycache__', '.pytest_cache', 'build', 'dist'}
_built = {}


def _source_digest(package):
  """A digest of what goes into ``flax-<package>``'s wheel."""
  base = ROOT / 'packages' / package
  digest = hashlib.sha256()
  for part in _SOURCE_PARTS:
    top = base / part
    paths = [top] if top.is_file() else sorted(top.rglob('*'))
    for path in paths:
      rel = path.relative_to(base)
      if not path.is_file() or _SKIP_DIRS.intersection(rel.parts):
        continue
      if path.suffix == '.pyc' or rel.parts[-1].endswith('.egg-info'):
        continue
      digest.update(f'{rel.as_posix()}\0'.encode())
      digest.update(path.read_bytes())
  return digest.hexdigest()[:16]


def _wheel(session, package):
  """The wheel of ``flax-<package>`` for the current sources (built once)."""
  if package in _built:
    return _built[package]
  folder = WHEELHOUSE / f'{package}-{_source_digest(package)}'
  wheels = sorted(folder.glob('*.whl'))
  if not wheels:
    # Parallel sessions may build the same wheel: each builds into its own
    # folder and the first to finish publishes it.
    staging = folder.with_name(f'{folder.name}.partial-{os.getpid()}')
    shutil.rmtree(staging, ignore_errors=True)
    session.run(
      sys.executable,
      '-m',
      'uv',
      'build',
      '--wheel',
      '-q',
      '--out-dir',
      str(staging),
      str(ROOT / 'packages' / package),
      external=True,
      silent=True,
    )
    for old in WHEELHOUSE.glob(f'{package}-*'):
      if not old.name.startswith(folder.name):
        shutil.rmtree(old, ignore_errors=True)
    try:
      staging.rename(folder)
    except OSError:  # another session published it first
      shutil.rmtree(staging, ignore_errors=True)
    wheels = sorted(folder.glob('*.whl'))
  _built[package] = wheels[0]
  return wheels[0]


def _requirement(session, package, extras=()):
  """``flax-<package>`` (with ``extras``) as a requirement on its wheel."""
  suffix = f'[{",".join(extras)}]' if extras else ''
  return f'flax-{package}{suffix} @ {_wheel(session, package).as_uri()}'


def _install_packages(session, wanted, extras=None):
  """Installs our ``wanted`` packages from the wheelhouse, says which."""
  extras = extras or {}
  session.log(
    'Installing '
    + ', '.join(
      f'flax-{p}' + (f'[{",".join(extras[p])}]' if extras.get(p) else '')
      for p in wanted
    )
    + ' (wheels from .nox/_wheels)'
  )
  session.install(
    *(_requirement(session, p, extras.get(p, ())) for p in wanted),
    *TEST_TOOLS,
  )


def _install(session, package, extras=()):
  """Installs ``package`` and only the siblings it declares."""
  wanted = [package, *siblings(package, extras)]
  _install_packages(session, wanted, {package: extras})


def _third_party(package, extras=()):
  """What ``flax-<package>`` (with ``extras``) requires besides siblings."""
  project = _project(package)
  requirements = list(project.get('dependencies', []))
  for extra in extras:
    requirements += project.get('optional-dependencies', {}).get(extra, [])
  return [r for r in requirements if not _sibling(r)]


def _floors(package, extras=()):
  """The third-party requirements of ``package`` and the siblings it needs.

  Only the root package's extras count, as in ``siblings``.
  """
  found = []
  for p in [package, *siblings(package, extras)]:
    for req in _third_party(p, extras if p == package else ()):
      if req not in found:
        found.append(req)
  return found


def _lower_bound(requirement):
  """``'jax>=0.10.0'`` -> ``Version('0.10.0')``; None without one."""
  bounds = [
    Version(spec.version)
    for spec in requirement.specifier
    if spec.operator in ('>=', '~=', '==', '===')
  ]
  return max(bounds) if bounds else None


def _install_lowest(session, package, extras=()):
  """Installs ``package`` and its siblings at their declared floors.

  Every third-party requirement that these packages declare is given to uv
  as a direct requirement under ``--resolution lowest-direct``, so each is
  installed at the lowest version its specifier allows (what they require
  in turn at the highest that fits). A declared lower bound that cannot be
  installed as such (another requirement needs more, or it has no wheel for
  this Python) fails the session: raise it to what is tested.
  """
  wanted = [package, *siblings(package, extras)]
  floors = _floors(package, extras)
  session.log(
    'Installing '
    + ', '.join(
      f'flax-{p}' + (f'[{",".join(extras)}]' if p == package and extras else '')
      for p in wanted
    )
    + ' (wheels from .nox/_wheels) at the lowest versions of: '
    + ', '.join(floors)
  )
  session.install(
    '--resolution',
    'lowest-direct',
    *(_requirement(session, p, extras if p == package else ()) for p in wanted),
    *floors,
    *(t for t in TEST_TOOLS if t not in floors),
  )
  _check_floors(session, floors)


def _check_floors(session, requirements):
  """Fails unless each requirement is installed at its lower bound (the
  highest of the bounds when several packages require one distribution)."""
  wanted = {}
  for req in map(Requirement, requirements):
    if not req.marker or req.marker.evaluate():
      wanted.setdefault(req.name, []).append(req)
  code = (
    'import importlib.metadata as m, sys\n'
    'print(" ".join(m.version(n) for n in sys.argv[1:]))'
  )
  names = list(wanted)
  found = session.run('python', '-c', code, *names, silent=True).split()
  problems = []
  for name, version in zip(names, found):
    floors = [_lower_bound(req) for req in wanted[name]]
    problems += [
      f'{req} declares no lower bound'
      for req, floor in zip(wanted[name], floors)
      if floor is None
    ]
    floor = max((f for f in floors if f is not None), default=None)
    if floor is not None and Version(version) != floor:
      problems.append(
        f'{name}>={floor}: the lowest installable version is {version}'
      )
  session.log('Lowest: ' + ', '.join(f'{n}=={v}' for n, v in zip(names, found)))
  if problems:
    session.error(
      'Declared lower bounds that cannot be installed (raise them to what '
      'is tested):\n  ' + '\n  '.join(problems)
    )


# Flax's own CI settings: implicit rank promotion is an error, and so is
# every warning (pytest's filterwarnings in pyproject.toml, plus -W here for
# what happens outside a test).
# Every session, scenario and subprocess shares one persistent XLA
# compilation cache under .nox/: a program compiled once (e.g. the
# truncated-normal initializer at a given shape) is loaded from disk by every
# later session instead of being compiled again. Only the backend compile is
# cached; tracing, numerics and warnings are unchanged.
JAX_CACHE_ENV = {
  'JAX_COMPILATION_CACHE_DIR': str(ROOT / '.nox' / '_jax_cache'),
  'JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS': '0',
}
BASE_ENV = {'JAX_NUMPY_RANK_PROMOTION': 'raise', 'JAX_PLATFORMS': 'cpu'}
CI_ENV = {**BASE_ENV, **JAX_CACHE_ENV}
# The test programs are tiny: XLA's backend optimization passes cost far more
# than running them (most of the matrix's CPU time is compiling). Tests and
# conformance scenarios compile at level 0, with XLA's older (non-MLIR) CPU
# fusion emitters, which compile these programs in about half the time;
# float results may differ in the last bits (checks compare with tolerances,
# and the docstring examples print rounded values). tests-training pins
# exact losses over optimizer steps and keeps XLA's defaults, as do the
# benchmarks. Conformance results stored under tests/conformance/_recorded
# that depend on the last bits were recorded with these flags.
QUICK_XLA_FLAGS = (
  '--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false'
)
QUICK_ENV = {**CI_ENV, 'XLA_FLAGS': QUICK_XLA_FLAGS}
EXACT_NUMERICS = frozenset({'training'})


def _pytest(session, *paths, env=QUICK_ENV):
  """Runs pytest under ``env``; logs how many tests ran."""
  report = pathlib.Path(session.create_tmp()) / 'pytest-report.xml'
  report.unlink(missing_ok=True)
  try:
    session.run(
      'python',
      '-m',
      'pytest',
      *paths,
      '-q',
      '-W',
      'error',
      f'--junitxml={report}',
      *session.posargs,
      env=env,
    )
  finally:
    if report.exists():
      session.log(_test_counts(report, paths))


def _test_counts(report, paths):
  """``'tests/core: 329 tests ran: 329 passed, 0 failed, ...'``."""
  import xml.etree.ElementTree as ET

  totals = dict.fromkeys(('tests', 'failures', 'errors', 'skipped'), 0)
  for suite in ET.parse(report).getroot().iter('testsuite'):
    for key in totals:
      totals[key] += int(suite.get(key, 0))
  bad = totals['failures'] + totals['errors']
  passed = totals['tests'] - bad - totals['skipped']
  return (
    f'{" ".join(paths)}: {totals["tests"]} tests ran: {passed} passed, '
    f'{bad} failed, {totals["skipped"]} skipped'
  )


def _doctests(session, package, *flags):
  """Runs the docstring examples of ``flax-<package>``."""
  session.run(
    'python',
    str(ROOT / 'tests' / 'run_doctests.py'),
    package,
    *flags,
    env=QUICK_ENV,
  )


# Packages some of whose modules need a sibling that is not a dependency
# (flax.nnx.bridge needs flax-linen, flax.nnx.nn flax-layers, ...): their
# session runs the examples it can; ``tests-nnx-bridge`` runs all of them.
# Every other package's session runs all of its examples (``--strict``).
PARTIAL_DOCTESTS = ('nnx',)


def _make_tests_session(package, lowest=False):
  def tests(session):
    if lowest:
      _install_lowest(session, package, ('test',))
    else:
      _install(session, package, ('test',))
    _pytest(
      session,
      f'tests/{package}',
      env=CI_ENV if package in EXACT_NUMERICS else QUICK_ENV,
    )
    strict = () if package in PARTIAL_DOCTESTS else ('--strict',)
    _doctests(session, package, *strict)

  tests.__doc__ = (
    f'Run tests/{package} and the docstring examples of flax-{package} with '
    f'only flax-{package} and its declared dependencies installed'
    + (
      ', each third-party one at the lowest version declared (uv '
      'lowest-direct).'
      if lowest
      else ', at their latest versions.'
    )
  )
  name = f'tests-{package}' + ('-lowest' if lowest else '')
  axis = 'lowest' if lowest else 'latest'
  return nox.session(name=name, tags=['tests', axis])(tests)


# The dependency axis: `tests-<package>` installs the latest versions of the
# third-party dependencies, `tests-<package>-lowest` the lowest ones declared
# (`nox -t lowest` / `nox -t latest` run one side).
for _package in PACKAGES:
  globals()[f'tests_{_package}'] = _make_tests_session(_package)
  globals()[f'tests_{_package}_lowest'] = _make_tests_session(
    _package, lowest=True
  )


@nox.session(name='tests-nnx-bridge', tags=['tests'])
def tests_nnx_bridge(session):
  """Run tests/nnx_bridge with the ``bridge`` extra (flax-linen) installed,
  flax-layers providing the layers the tests wrap; then every docstring
  example of flax-nnx (``--strict``), flax-training providing what
  flax.nnx.training re-exports."""
  wanted = {'nnx', *siblings('nnx', ('test', 'bridge'))}
  for extra in ('layers', 'training'):
    wanted |= {extra, *siblings(extra)}
  wanted = [p for p in PACKAGES if p in wanted]
  _install_packages(session, wanted, {'nnx': ('test', 'bridge')})
  _pytest(session, 'tests/nnx_bridge')
  _doctests(session, 'nnx', '--strict')


def _install_all(session):
  _install_packages(session, PACKAGES, {p: ('test',) for p in PACKAGES})


@nox.session(tags=['tests'])
def integration(session):
  """Cross-package tests with every package installed.

  The docstring examples are not run here: each package's session runs all
  of them (``--strict``; flax-nnx's in ``tests-nnx-bridge``).
  """
  _install_all(session)
  session.install('-r', str(ROOT / 'examples' / 'requirements.txt'))
  _pytest(session, 'tests/integration')


@nox.session(tags=['tests'])
def multihost(session):
  """2 processes x 4 CPU devices on jax.distributed: training, checkpoints."""
  _install_all(session)
  session.install('optax', 'orbax-checkpoint')
  # Processes of one jax.distributed job compile the same programs at once;
  # they do not share the compilation cache.
  # Both sides of each comparison (one process, two) compile the same way.
  _pytest(
    session, 'tests/multihost', env={**BASE_ENV, 'XLA_FLAGS': QUICK_XLA_FLAGS}
  )


REFERENCE = 'flax==0.12.8'
# Installed beside the reference at the versions the project's session has,
# so that differences are Flax's, not its dependencies'.
PINNED = ('jax', 'jaxlib', 'numpy', 'optax', 'orbax-checkpoint', 'msgpack')
REFERENCE_EXTRAS = ('rich', 'treescope', 'pyyaml')
CONFORMANCE = ROOT / 'tests' / 'conformance'


def _reference_python(session):
  """A virtualenv with the reference Flax, built once under ``.nox/``."""
  given = os.environ.get('FLAX_REFERENCE_PYTHON')
  if given:
    return given
  code = (
    'import importlib.metadata as m; '
    f'print(" ".join(f"{{d}}=={{m.version(d)}}" for d in {PINNED!r}))'
  )
  pins = session.run('python', '-c', code, silent=True).split()
  wanted = sorted([REFERENCE, *pins, *REFERENCE_EXTRAS])
  env = ROOT / '.nox' / '_reference-flax-0.12.8'
  python = env / 'bin' / 'python'
  stamp = env / 'requirements.txt'
  if python.exists() and stamp.exists():
    if stamp.read_text().split() == wanted:
      return str(python)
  uv = (sys.executable, '-m', 'uv')
  session.run(*uv, 'venv', '-q', '--clear', str(env), external=True)
  session.run(
    *uv,
    'pip',
    'install',
    '-q',
    '--python',
    str(python),
    *wanted,
    external=True,
  )
  stamp.write_text('\n'.join(wanted) + '\n')
  return str(python)


@nox.session(tags=['tests'])
def conformance(session):
  """Scenarios run under Flax 0.12.8 and the project, compared; API ratchet.

  ``nox -s conformance -- -k nnx/`` runs a subset (runner options after
  ``--``).
  """
  _install_all(session)
  session.install('optax', 'orbax-checkpoint', 'rich', 'treescope')
  reference = _reference_python(session)
  session.run(
    'python',
    str(CONFORMANCE / 'runner.py'),
    '--reference',
    reference,
    '--cache',
    str(ROOT / '.nox' / 'conformance-cache'),
    *(session.posargs or ('--min-scenarios', '60')),
    env={**JAX_CACHE_ENV, 'XLA_FLAGS': QUICK_XLA_FLAGS},
  )
  session.run('python', str(CONFORMANCE / 'api_ratchet.py'))


# What Flax 0.12.8's own test suite imports besides our packages and their
# test extras; pip downloads the suite's source distribution.
UPSTREAM_TOOLS = ('pip', 'pytest-xdist', 'absl-py', 'cloudpickle')


@nox.session(tags=['tests'])
def upstream(session):
  """Flax 0.12.8's own test suite (tests/ of its sdist) against the project.

  Compared with the tests that pass on Flax 0.12.8 itself
  (tests/upstream/baseline.txt) less the known failures; see
  tools/upstream.py. ``nox -s upstream -- tests/nnx/ema_test.py -k ema``
  runs a subset; ``nox -s upstream -- --prune`` removes the tests that pass
  now from tests/upstream/known_failures.txt.
  """
  _install_all(session)
  session.install(*UPSTREAM_TOOLS)
  session.run(
    'python', str(ROOT / 'tools' / 'upstream.py'), 'run', *session.posargs
  )


FIXTURES = ROOT / 'tests' / 'plugins' / 'fixtures'


@nox.session(tags=['tests'])
def plugins(session):
  """Install the fixture third-party plugins and exercise the registry.

  Every package is installed: the fixtures claim names of flax-layers,
  flax-nnx and flax-serialization, and check that lookups in flax.linen,
  flax.nnx and flax.training do not import unrelated plugins.
  """
  _install_all(session)
  session.install(*(str(p) for p in sorted(FIXTURES.iterdir())))
  _pytest(session, 'tests/plugins')


PLUGIN_PACKAGES = ROOT / 'plugins'


@nox.session(name='plugin-safetensors', tags=['tests'])
def plugin_safetensors(session):
  """Install flax-safetensors (plugins/) next to the packages; run its tests.

  The plugin is a third-party style distribution: it is installed from its
  folder like any other, with safetensors from the package index. Its tests
  run the checkpoint-backend suites against it, load PyTorch-layout files
  into NNX models (sharded over 8 CPU devices too), and check that
  ``from flax import nnx`` imports neither the plugin nor safetensors.
  """
  _install_all(session)
  session.install(str(PLUGIN_PACKAGES / 'flax-safetensors'))
  _pytest(session, 'plugins/flax-safetensors/tests')


# Top-level files a package may ship besides its own flax/<package>/.
EXTRA_FILES = {
  'core': None,  # core owns the flax root; checked separately below.
  'training': ('flax/jax_utils.py', 'flax/metrics/'),
  # flax.experimental.nnx: the NNX API under its older path.
  'nnx': ('flax/experimental/__init__.py', 'flax/experimental/nnx.py'),
}


@nox.session
def wheels(session):
  """Build every wheel and check that each ships only its own files (the
  ``flax`` drop-in none: it requires the seven packages)."""
  import zipfile

  found = [_wheel(session, p) for p in PACKAGES]
  problems = []
  for package in PACKAGES:
    dist = f'flax_{package}-'
    matches = [w for w in found if w.name.startswith(dist)]
    if len(matches) != 1:
      problems.append(f'flax-{package}: expected one wheel, got {matches}')
      continue
    names = [
      n
      for n in zipfile.ZipFile(matches[0]).namelist()
      if '.dist-info/' not in n
    ]
    others = [p for p in PACKAGES if p != package]
    for name in names:
      if package == 'core':
        bad = any(name.startswith(f'flax/{p}/') for p in others) or any(
          name == f'flax/_plugins/{p}.py' for p in others
        )
      else:
        # A path ending in '/' allows the whole folder.
        allowed = name.startswith(
          (
            f'flax/{package}/',
            f'flax/_plugins/{package}.py',
            *EXTRA_FILES.get(package, ()),
          )
        )
        bad = not allowed
      if bad:
        problems.append(f'flax-{package} wheel contains {name}')
    if package != 'core' and 'flax/__init__.py' in names:
      problems.append(f'flax-{package} wheel ships flax/__init__.py')
  drop_in = _wheel(session, DROP_IN)
  names = zipfile.ZipFile(drop_in).namelist()
  problems += [
    f'{DROP_IN} wheel contains {name}'
    for name in names
    if '.dist-info/' not in name
  ]
  (metadata,) = [n for n in names if n.endswith('.dist-info/METADATA')]
  text = zipfile.ZipFile(drop_in).read(metadata).decode()
  required = {
    Requirement(line.split(':', 1)[1]).name
    for line in text.splitlines()
    if line.startswith('Requires-Dist:')
  }
  problems += [
    f'{DROP_IN} wheel does not require flax-{p}'
    for p in PACKAGES
    if f'flax-{p}' not in required
  ]
  if problems:
    session.error('Wheel contents are wrong:\n  ' + '\n  '.join(problems))
  session.log(f'{len(found) + 1} wheels checked')


# The drop-in distribution `flax` (packages/flax): no code, it requires the
# seven packages.
DROP_IN = 'flax'
# A library from the package index that requires `flax` (flax-metrics 0.4.0:
# `flax>=0.10.7`, NNX metrics), light to install.
DOWNSTREAM_LIBRARY = 'flax-metrics'


@nox.session(tags=['tests'])
def downstream(session):
  """The ``flax`` distribution as a drop-in, under a library from the index.

  Installs the ``flax`` distribution and the seven packages (built wheels),
  then, with pip as a user would, a library that requires ``flax``
  (flax-metrics); tests/downstream checks that the project's ``flax`` is
  the one imported, that ``importlib.metadata.version('flax')`` and
  ``flax.__version__`` agree, that ``pip check`` passes and that a short
  program of the library runs.
  """
  drop_in = f'{DROP_IN} @ {_wheel(session, DROP_IN).as_uri()}'
  session.log(
    'Installing flax (the drop-in) and '
    + ', '.join(f'flax-{p}' for p in PACKAGES)
    + ' (wheels from .nox/_wheels)'
  )
  session.install(
    drop_in, *(_requirement(session, p) for p in PACKAGES), *TEST_TOOLS, 'pip'
  )
  session.run('python', '-m', 'pip', 'install', DOWNSTREAM_LIBRARY)
  _pytest(session, 'tests/downstream', env=QUICK_ENV)


def _venv_with(session, name, packages):
  """A fresh venv holding only our ``packages`` (and what they require)."""
  env = pathlib.Path(session.create_tmp()) / f'venv-{name}'
  uv = (sys.executable, '-m', 'uv')
  session.run(*uv, 'venv', '-q', '--allow-existing', str(env), external=True)
  python = str(env / 'bin' / 'python')
  session.run(
    *uv,
    'pip',
    'install',
    '-q',
    '--python',
    python,
    *(_requirement(session, p) for p in packages),
    external=True,
  )
  return python


# Environments of several packages, each running a docs example.
COMBOS = {
  'linen': ('core', 'linen', 'layers'),
  'nnx': ('core', 'nnx', 'layers'),
}


@nox.session
def isolation(session):
  """Install each wheel alone and check what importing it pulls in."""
  tests = ROOT / 'tests'
  for package in PACKAGES:
    wanted = [package, *siblings(package)]
    python = _venv_with(session, package, wanted)
    session.run(
      python,
      '-W',
      'error',
      str(tests / 'isolation_check.py'),
      package,
      json.dumps(siblings(package)),
      external=True,
      env=CI_ENV,
    )
  for name, packages in COMBOS.items():
    python = _venv_with(session, f'combo-{name}', packages)
    session.run(
      python,
      '-W',
      'error',
      str(tests / 'isolation_combos.py'),
      name,
      external=True,
      env=CI_ENV,
    )


@nox.session
def install(session):
  """Run every install command of README.md in a fresh virtualenv.

  Each ``pip install`` line runs as ``uv pip install`` with the same
  arguments from the repository root, then what it promises is imported.
  Not in the default list: it reaches the package index (or uv's cache).
  """
  session.install(*TEST_TOOLS, 'uv')
  _pytest(session, 'tests/install')


DOCS_TOOLS = (
  'mkdocs>=1.6',
  'mkdocs-material>=9.5',
  'mkdocstrings[python]>=0.26',
)


def _headless_browser(session):
  """Debian's chromium, installed with apt-get when missing and root."""
  for name in ('chromium', 'chromium-browser', 'google-chrome'):
    if shutil.which(name):
      return
  if os.environ.get('FLAX_DOCS_BROWSER'):
    return
  if shutil.which('apt-get') and os.geteuid() == 0:
    session.log('Installing chromium (apt-get) for the page rendering test')
    session.run('apt-get', 'update', '-qq', external=True)
    session.run(
      'apt-get',
      'install',
      '-y',
      '-qq',
      'chromium',
      external=True,
      env={'DEBIAN_FRONTEND': 'noninteractive'},
    )
    return
  session.error(
    'The docs session needs a headless Chromium: install it (Debian: '
    '`apt-get install chromium`) or set FLAX_DOCS_BROWSER.'
  )


@nox.session
def docs(session):
  """Build the documentation site into site/ (mkdocs --strict).

  First every docstring example of every package and every Python example
  of the pages runs; after the build, headless Chromium opens the home page
  and an API page and checks that they render.
  """
  _install_all(session)
  session.install(
    '-r',
    str(ROOT / 'examples' / 'requirements.txt'),
    *DOCS_TOOLS,
    'pillow',
  )
  for package in PACKAGES:
    _doctests(session, package, '--strict')
  _pytest(session, 'tests/docs/test_page_examples.py')
  site = ROOT / 'site'
  session.run(
    'mkdocs',
    'build',
    '--strict',
    '--clean',
    '--site-dir',
    str(site),
    env={'NO_MKDOCS_2_WARNING': '1'},
  )
  _headless_browser(session)
  session.run(
    'python',
    '-m',
    'pytest',
    'tests/docs/test_site_renders.py',
    '-q',
    '-W',
    'error',
    env={**CI_ENV, 'FLAX_DOCS_SITE': str(site)},
  )
  session.log(f'Site built in {site}; open {site / "index.html"}')


# Pinned: formatting rules change between ruff releases.
RUFF = 'ruff==0.17.6'


@nox.session
def lint(session):
  """ruff (lint rules, 2-space indent, single quotes), the import scan, the
  floors of flax-nnx (docs/architecture.md), and that versions,
  inter-package ranges and changelogs agree (``tools/release.py check``)."""
  session.install(RUFF, 'packaging')
  session.run('ruff', 'check', '.')
  session.run('ruff', 'format', '--check', '.')
  session.run('python', str(ROOT / 'tests' / 'import_scan.py'))
  session.run('python', str(ROOT / 'tests' / 'nnx_layers.py'))
  session.run('python', str(ROOT / 'tools' / 'release.py'), 'check')


@nox.session
def bench(session):
  """Benchmarks: ratios of Flax work to the same work in raw JAX.

  ``benchmarks/nnx_bench.py`` also runs its cases under Flax 0.12.8 when
  the conformance session's reference env (``.nox/_reference-flax-0.12.8``,
  or ``$FLAX_REFERENCE_PYTHON``) exists, and prints both ratios side by
  side; it does not build that env.
  """
  _install_all(session)
  reference = os.environ.get('FLAX_REFERENCE_PYTHON') or str(
    ROOT / '.nox' / '_reference-flax-0.12.8' / 'bin' / 'python'
  )
  for script in sorted((ROOT / 'benchmarks').glob('*.py')):
    if script.name.startswith('_'):
      continue
    extra = ()
    if script.name == 'nnx_bench.py' and os.path.exists(reference):
      extra = ('--reference', reference)
    session.run('python', str(script), *extra, *session.posargs)


@nox.session(reuse_venv=True)
def demo(session):
  """The main demo: train a small CNN on the 8x8 digits data set.

  The virtualenv is kept between runs; packages whose sources changed are
  rebuilt and reinstalled, the rest is left as it is.
  """
  _install_all(session)
  session.install('-r', str(ROOT / 'examples' / 'requirements.txt'))
  session.run(
    'python', str(ROOT / 'examples' / 'digits_demo.py'), *session.posargs
  )
