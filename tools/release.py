"""Versions of the monorepo's distributions: check that they agree, release.

Each distribution has its own version, in its ``pyproject.toml``; its
``CHANGELOG.md`` starts with an ``## Unreleased`` section (where changes are
written as they are made; it may be empty), followed by one
``## VERSION (YYYY-MM-DD)`` section per release, newest first.

``python tools/release.py check`` (run by ``nox -s lint``) fails unless:

- each pyproject version is the version of the newest dated changelog
  heading (a distribution never released yet has no dated heading; the
  version in its pyproject is the one its first release takes);
- the headings are an optional ``## Unreleased`` first, then releases in
  decreasing version and date order;
- every requirement of one distribution on another (dependencies and
  extras) has a lower bound that is a version of that distribution (a
  release, or its current version), and admits its current version, so the
  checkout's packages install together;
- the ``__version__`` values agree: a plugin's ``__version__`` is its
  pyproject version, and the ``flax`` distribution's version is
  ``flax.version.COMPATIBLE_VERSION`` with the local label ``modular.N``.

``python tools/release.py release PACKAGE... [--bump major|minor|patch |
--version X]`` releases packages (folder names: ``core``, ``nnx``, ...,
``flax``, ``flax-safetensors``), in dependency order:

- the new version: ``--bump`` (default ``patch``; for ``flax`` the local
  label's number goes up), or ``--version``; a package never released takes
  its current version unless told otherwise;
- its ``## Unreleased`` entries move under ``## VERSION (DATE)`` and a new
  empty ``## Unreleased`` section is left on top;
- its requirements on the other distributions are raised to the versions
  they have now (the versions it was tested with in this checkout), up to
  their next breaking release;
- a distribution requiring it whose range does not admit the new version
  gets the range raised, and an entry saying so in its ``## Unreleased``
  section (it needs a release of its own).

It refuses, changing nothing, when the check fails before or would fail
after, when the package has no unreleased entry, when the new version is not
above the current one, or when a distribution it requires has unreleased
entries (release that one first, or in the same command).
"""

import argparse
import dataclasses
import datetime
import pathlib
import re
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Folder -> distribution; the order is a dependency order.
FOLDERS = {
  'packages/core': 'flax-core',
  'packages/serialization': 'flax-serialization',
  'packages/linen': 'flax-linen',
  'packages/spmd': 'flax-spmd',
  'packages/nnx': 'flax-nnx',
  'packages/layers': 'flax-layers',
  'packages/training': 'flax-training',
  'packages/flax': 'flax',
  'plugins/flax-safetensors': 'flax-safetensors',
}
# Distributions whose `__version__` (in this file) is their version.
VERSION_FILES = {
  'flax-safetensors': 'src/flax_safetensors/__init__.py',
}
# The drop-in `flax`: `COMPATIBLE_VERSION+LOCAL_LABEL.N`, read from here.
DROP_IN = 'flax'
COMPAT_FILE = 'packages/core/src/flax/version.py'

UNRELEASED = re.compile(r'^## (?:(\S+) \()?unreleased\)?[ \t]*$', re.I | re.M)
RELEASED = re.compile(r'^## (\S+) \((\d{4}-\d{2}-\d{2})\)[ \t]*$')
HEADING = re.compile(r'^## .*$', re.M)
PROJECT_VERSION = re.compile(r'^(version\s*=\s*")([^"]+)(")', re.M)
QUOTED = re.compile(r'"([^"\n]+)"')


class Files:
  """The repository's files, with edits staged in memory until written."""

  def __init__(self, root=ROOT):
    self.root = root
    self.staged = {}

  def read(self, path):
    if path in self.staged:
      return self.staged[path]
    return (self.root / path).read_text()

  def write(self, path, text):
    self.staged[path] = text

  def flush(self):
    for path, text in self.staged.items():
      (self.root / path).write_text(text)


@dataclasses.dataclass
class Changelog:
  """What a changelog says: its unreleased section and its releases."""

  title: str
  unreleased: str | None  # the section's body; None without the heading
  unreleased_version: str | None  # `## 0.12.0 (unreleased)` names one
  releases: list  # [(version, date)], as written, newest first
  problems: list


def parse_changelog(text, dist):
  problems = []
  title = text.splitlines()[0] if text else ''
  if title != f'# Changelog of {dist}':
    problems.append(f'its first line is not "# Changelog of {dist}"')
  headings = list(HEADING.finditer(text))
  unreleased = unreleased_version = None
  releases = []
  for i, match in enumerate(headings):
    end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
    line = match.group(0)
    if m := UNRELEASED.match(line):
      if i:
        problems.append(f'"{line}" is not the first section')
      unreleased = text[match.end() : end]
      unreleased_version = m.group(1)
    elif m := RELEASED.match(line):
      releases.append((m.group(1), m.group(2)))
    else:
      problems.append(
        f'"{line}" is neither "## Unreleased" nor "## VERSION (YYYY-MM-DD)"'
      )
  for (new, new_date), (old, old_date) in zip(releases, releases[1:]):
    try:
      if Version(new) <= Version(old):
        problems.append(f'release {new} is listed above {old}')
    except InvalidVersion:
      pass
    if new_date < old_date:
      problems.append(f'release {new} ({new_date}) is dated before {old}')
  for version, date in releases:
    try:
      Version(version)
      datetime.date.fromisoformat(date)
    except (InvalidVersion, ValueError):
      problems.append(f'heading "## {version} ({date})" is malformed')
  return Changelog(title, unreleased, unreleased_version, releases, problems)


def has_entries(section):
  return bool(section and section.strip())


@dataclasses.dataclass
class Dist:
  folder: str
  name: str
  version: str
  requirements: list  # [Requirement]: dependencies, then extras
  changelog: Changelog


def load(files):
  dists = {}
  for folder, name in FOLDERS.items():
    if not (files.root / folder / 'pyproject.toml').is_file():
      continue
    project = tomllib.loads(files.read(f'{folder}/pyproject.toml'))['project']
    requirements = [Requirement(r) for r in project.get('dependencies', [])]
    for reqs in project.get('optional-dependencies', {}).values():
      requirements += [Requirement(r) for r in reqs]
    changelog = parse_changelog(files.read(f'{folder}/CHANGELOG.md'), name)
    dists[name] = Dist(
      folder, project['name'], project['version'], requirements, changelog
    )
  return dists


def next_breaking(version):
  """The first release that may break ``version``'s users: 0.12.3 -> 0.13."""
  v = Version(version)
  return f'0.{v.minor + 1}' if v.major == 0 else f'{v.major + 1}'


def compatible_range(version):
  return f'>={version},<{next_breaking(version)}'


def _lower_bounds(specifier):
  return [
    s.version for s in specifier if s.operator in ('>=', '~=', '==', '===')
  ]


def _compat_version(files):
  text = files.read(COMPAT_FILE)
  found = dict(
    re.findall(r"^(COMPATIBLE_VERSION|LOCAL_LABEL) = '([^']+)'", text, re.M)
  )
  return found.get('COMPATIBLE_VERSION'), found.get('LOCAL_LABEL')


def _version_file(files, dist):
  text = files.read(f'{dist.folder}/{VERSION_FILES[dist.name]}')
  match = re.search(r"^__version__ = '([^']+)'", text, re.M)
  return match.group(1) if match else None


def check(files):
  """Every disagreement between versions, ranges and changelogs."""
  dists = load(files)
  problems = []
  for dist in dists.values():
    where = f'{dist.name} ({dist.folder})'
    if dist.name != FOLDERS[dist.folder]:
      problems.append(f'{where}: pyproject name is {dist.name}')
    problems += [f'{where} CHANGELOG.md: {p}' for p in dist.changelog.problems]
    try:
      Version(dist.version)
    except InvalidVersion:
      problems.append(f'{where}: version {dist.version!r} is not PEP 440')
      continue
    releases = dist.changelog.releases
    if releases and Version(releases[0][0]) != Version(dist.version):
      problems.append(
        f'{where}: pyproject version {dist.version} is not the newest '
        f'release of its CHANGELOG.md ({releases[0][0]})'
      )
    named = dist.changelog.unreleased_version
    if named and (releases or Version(named) != Version(dist.version)):
      problems.append(
        f'{where}: CHANGELOG.md names the unreleased version {named}; '
        'write "## Unreleased"'
      )
    if dist.name in VERSION_FILES:
      found = _version_file(files, dist)
      if found != dist.version:
        problems.append(
          f'{where}: __version__ is {found!r}, pyproject version '
          f'{dist.version!r}'
        )
    for req in dist.requirements:
      other = dists.get(req.name)
      if other is None:
        continue
      released = {v for v, _ in other.changelog.releases} | {other.version}
      floors = _lower_bounds(req.specifier)
      if not floors:
        problems.append(f'{where}: "{req}" has no lower bound')
      elif not any(Version(f) == Version(r) for f in floors for r in released):
        problems.append(
          f'{where}: the lower bound of "{req}" is no version of {req.name}'
        )
      if not req.specifier.contains(other.version, prereleases=True):
        problems.append(
          f'{where}: "{req}" does not admit {req.name} {other.version} '
          "(the checkout's version)"
        )
  drop_in = dists.get(DROP_IN)
  if drop_in is not None:
    compatible, label = _compat_version(files)
    v = Version(drop_in.version)
    if v.public != compatible or not (v.local or '').startswith(f'{label}.'):
      problems.append(
        f'{DROP_IN}: version {drop_in.version} is not '
        f'{compatible}+{label}.N (flax.version.COMPATIBLE_VERSION and '
        'LOCAL_LABEL in flax-core)'
      )
    required = {r.name for r in drop_in.requirements}
    for name in FOLDERS.values():
      if name.startswith('flax-') and name != 'flax-safetensors':
        if name in dists and name not in required:
          problems.append(f'{DROP_IN}: does not require {name}')
  return problems


def _rewrite_requirements(text, rewrite):
  """``text`` (a pyproject) with each quoted requirement passed through
  ``rewrite(Requirement) -> str | None`` (None: unchanged)."""

  project = tomllib.loads(text)['project']
  declared = set(project.get('dependencies', []))
  for reqs in project.get('optional-dependencies', {}).values():
    declared |= set(reqs)

  def one(match):
    if match.group(1) not in declared:  # a name, a description, ...
      return match.group(0)
    new = rewrite(Requirement(match.group(1)))
    return match.group(0) if new is None else f'"{new}"'

  head, sep, tail = text.partition('[project]')
  body, sep2, rest = tail.partition('\n[tool.')
  return head + sep + QUOTED.sub(one, body) + sep2 + rest


def _with_specifier(req, specifier):
  extras = f'[{",".join(sorted(req.extras))}]' if req.extras else ''
  marker = f' ; {req.marker}' if req.marker else ''
  return f'{req.name}{extras}{specifier}{marker}'


def _add_entry(text, entry):
  """``text`` (a changelog) with ``entry`` first in ``## Unreleased``."""
  match = UNRELEASED.search(text)
  if match is None:
    first = HEADING.search(text)
    at = first.start() if first else len(text)
    return text[:at] + f'## Unreleased\n\n{entry}\n\n' + text[at:]
  body_start = match.end() + 1
  rest = text[body_start:].lstrip('\n')
  gap = '' if rest.startswith('- ') else '\n' if rest else ''
  return text[:body_start] + f'\n{entry}\n' + gap + rest


def new_version(dist, bump=None, version=None):
  current = Version(dist.version)
  named = dist.changelog.unreleased_version
  first = not dist.changelog.releases
  if version is None and named:
    version = named
  if version is None and first and bump is None:
    return dist.version
  if version is not None:
    target = Version(version)
    if target < current or (target == current and not first):
      raise SystemExit(
        f'{dist.name}: {version} is not above its version {dist.version}'
      )
    return version
  bump = bump or 'patch'
  if dist.name == DROP_IN:
    prefix, _, number = current.local.rpartition('.')
    return f'{current.public}+{prefix}.{int(number) + 1}'
  major, minor, patch = (current.release + (0, 0))[:3]
  return {
    'major': f'{major + 1}.0.0',
    'minor': f'{major}.{minor + 1}.0',
    'patch': f'{major}.{minor}.{patch + 1}',
  }[bump]


def release_one(files, name, bump, version, date):
  """Stages the release of ``name``; returns what it did, line by line."""
  dists = load(files)
  dist = dists[name]
  done = []
  if not has_entries(dist.changelog.unreleased):
    raise SystemExit(
      f'{name}: nothing to release (no entry under "## Unreleased" in '
      f'{dist.folder}/CHANGELOG.md)'
    )
  new = new_version(dist, bump, version)
  waiting = [
    r.name
    for r in dist.requirements
    if r.name in dists and has_entries(dists[r.name].changelog.unreleased)
  ]
  if waiting:
    raise SystemExit(
      f'{name}: {", ".join(sorted(set(waiting)))} has unreleased changes that '
      f'{name} was tested with; release it first (or in the same command)'
    )
  # Its requirements on the other distributions: the versions it was
  # tested with, up to their next breaking release.
  path = f'{dist.folder}/pyproject.toml'
  text = files.read(path)
  raised = {}

  def raise_floor(req):
    other = dists.get(req.name)
    if other is None:
      return None
    wanted = compatible_range(other.version)
    if req.specifier == SpecifierSet(wanted):
      return None
    raised[req.name] = wanted
    return _with_specifier(req, wanted)

  text = _rewrite_requirements(text, raise_floor)
  log = f'{dist.folder}/CHANGELOG.md'
  for other, wanted in raised.items():
    done.append(f'{name}: requires {other}{wanted}')
    files.write(
      log,
      _add_entry(
        files.read(log),
        f'- Requires `{other}{wanted}` (the version it was tested with).',
      ),
    )
  text = PROJECT_VERSION.sub(lambda m: m.group(1) + new + m.group(3), text, 1)
  files.write(path, text)
  if name in VERSION_FILES:
    vpath = f'{dist.folder}/{VERSION_FILES[name]}'
    files.write(
      vpath,
      re.sub(
        r"^__version__ = '[^']+'",
        f"__version__ = '{new}'",
        files.read(vpath),
        count=1,
        flags=re.M,
      ),
    )
  files.write(
    log,
    UNRELEASED.sub(f'## Unreleased\n\n## {new} ({date})', files.read(log), 1),
  )
  done.append(f'{name}: {dist.version} -> {new} ({date})')
  # Distributions requiring it whose range leaves the new version out.
  for other in dists.values():
    if other.name == name:
      continue
    opath = f'{other.folder}/pyproject.toml'
    raised = []

    def widen(req):
      if req.name != name or req.specifier.contains(new, prereleases=True):
        return None
      raised.append(compatible_range(new))
      return _with_specifier(req, compatible_range(new))

    otext = _rewrite_requirements(files.read(opath), widen)
    if raised:
      files.write(opath, otext)
      olog = f'{other.folder}/CHANGELOG.md'
      entry = (
        f'- Requires `{name}{raised[0]}` ({name} {new} was outside the range '
        'it had).'
      )
      files.write(olog, _add_entry(files.read(olog), entry))
      done.append(f'{other.name}: requires {name}{raised[0]} (needs a release)')
  return done


def _order(names, dists):
  """``names`` with each after the distributions it requires."""
  ordered = []

  def visit(name, seen=()):
    if name in ordered or name not in names:
      return
    for req in dists[name].requirements:
      if req.name in dists and req.name not in seen:
        visit(req.name, (*seen, name))
    ordered.append(name)

  for name in names:
    visit(name)
  return ordered


def _dist_name(arg):
  for folder, name in FOLDERS.items():
    if arg in (name, folder, folder.split('/')[-1]):
      return name
  raise SystemExit(f'unknown package {arg!r}; one of {sorted(FOLDERS)}')


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  commands = parser.add_subparsers(dest='command', required=True)
  commands.add_parser('check', help='versions, ranges and changelogs agree')
  rel = commands.add_parser('release', help='release packages')
  rel.add_argument('packages', nargs='+')
  how = rel.add_mutually_exclusive_group()
  how.add_argument('--bump', choices=('major', 'minor', 'patch'))
  how.add_argument('--version', help='the new version (one package)')
  rel.add_argument('--date', default=datetime.date.today().isoformat())
  rel.add_argument('--dry-run', action='store_true')
  args = parser.parse_args(argv)
  files = Files()
  problems = check(files)
  if args.command == 'check':
    if problems:
      print('Versions disagree:\n  ' + '\n  '.join(problems))
      return 1
    print(
      f'{len(load(files))} distributions: versions, ranges and changelogs agree'
    )
    return 0
  if problems:
    print('Refusing to release; versions disagree:\n  ' + '\n  '.join(problems))
    return 1
  names = [_dist_name(p) for p in args.packages]
  if args.version and len(names) > 1:
    raise SystemExit('--version names the version of one package')
  datetime.date.fromisoformat(args.date)
  done = []
  for name in _order(names, load(files)):
    done += release_one(files, name, args.bump, args.version, args.date)
  after = check(files)
  if after:
    print('Refusing to release; afterwards:\n  ' + '\n  '.join(after))
    return 1
  print('\n'.join(done))
  if args.dry_run:
    print('(dry run: nothing written)')
  else:
    files.flush()
  return 0


if __name__ == '__main__':
  sys.exit(main())
