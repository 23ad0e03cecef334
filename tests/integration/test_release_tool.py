"""tools/release.py: the version check and the release command, on a copy
of the repository's package metadata."""

import importlib.util
import pathlib
import re
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
  'release_tool', ROOT / 'tools' / 'release.py'
)
release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release)


def _released(changelog):
  """``changelog`` with an empty Unreleased section, as right after a release."""
  head, sep, rest = changelog.partition('## Unreleased\n')
  if not sep:
    return changelog
  later = re.search(r'^## ', rest, flags=re.MULTILINE)
  return head + sep + '\n' + (rest[later.start() :] if later else '')


@pytest.fixture
def repo(tmp_path):
  """The pyprojects, changelogs and version files of every distribution,
  with no unreleased changelog entries (the state right after a release)."""
  for folder, name in release.FOLDERS.items():
    (tmp_path / folder).mkdir(parents=True)
    shutil.copy(ROOT / folder / 'pyproject.toml', tmp_path / folder)
    changelog = (ROOT / folder / 'CHANGELOG.md').read_text()
    (tmp_path / folder / 'CHANGELOG.md').write_text(_released(changelog))
    extra = release.VERSION_FILES.get(name)
    if extra:
      (tmp_path / folder / extra).parent.mkdir(parents=True)
      shutil.copy(ROOT / folder / extra, tmp_path / folder / extra)
  compat = tmp_path / release.COMPAT_FILE
  compat.parent.mkdir(parents=True, exist_ok=True)
  shutil.copy(ROOT / release.COMPAT_FILE, compat)
  return tmp_path


def _add(repo, folder, entry):
  path = repo / folder / 'CHANGELOG.md'
  text = path.read_text()
  path.write_text(
    text.replace('## Unreleased\n', f'## Unreleased\n\n{entry}\n', 1)
  )


def _run(repo, *names, **options):
  files = release.Files(repo)
  done = []
  for name in release._order(list(names), release.load(files)):
    done += release.release_one(
      files, name, options.get('bump'), options.get('version'), '2031-01-02'
    )
  assert release.check(files) == []
  files.flush()
  return done


def test_the_checkout_agrees():
  assert release.check(release.Files()) == []


def test_a_breaking_release_raises_the_ranges_of_dependents(repo):
  _add(repo, 'packages/core', '- A breaking change.')
  core = release.load(release.Files(repo))['flax-core']
  new = release.new_version(core, 'minor')
  done = _run(repo, 'flax-core', bump='minor')
  assert f'flax-core: {core.version} -> {new} (2031-01-02)' in done
  dists = release.load(release.Files(repo))
  assert dists['flax-core'].version == new
  assert dists['flax-core'].changelog.releases[0] == (new, '2031-01-02')
  assert dists['flax-core'].changelog.unreleased.strip() == ''
  for name in ('flax-nnx', 'flax-linen', 'flax'):
    (req,) = [r for r in dists[name].requirements if r.name == 'flax-core']
    assert req.specifier.contains(new)
    assert 'Requires `flax-core' in dists[name].changelog.unreleased


def test_refusals(repo):
  files = release.Files(repo)
  with pytest.raises(SystemExit, match='nothing to release'):
    release.release_one(files, 'flax-core', None, None, '2031-01-02')
  _add(repo, 'packages/core', '- A fix.')
  _add(repo, 'packages/nnx', '- A fix.')
  files = release.Files(repo)
  with pytest.raises(SystemExit, match='flax-core has unreleased changes'):
    release.release_one(files, 'flax-nnx', None, None, '2031-01-02')
  with pytest.raises(SystemExit, match='is not above'):
    release.release_one(files, 'flax-core', None, '0.0.1', '2031-01-02')
  assert files.staged == {}


def test_the_check_finds_disagreements(repo):
  path = repo / 'packages/nnx/pyproject.toml'
  text = path.read_text()
  version = release.load(release.Files(repo))['flax-nnx'].version
  path.write_text(
    text.replace(f'version = "{version}"', 'version = "9.9.9"', 1)
  )
  (repo / 'packages/flax/CHANGELOG.md').write_text(
    '# Changelog of flax\n\n## Next\n'
  )
  problems = '\n'.join(release.check(release.Files(repo)))
  assert 'flax-nnx' in problems and '9.9.9' in problems
  assert '"## Next" is neither' in problems
