"""Install commands named by errors about a missing distribution."""

import json
import os

import pytest

import flax
from flax.plugins import _install

PYPROJECT = """\
[project]
name = "flax-{name}"
version = "0.12.0"
dependencies = [{deps}]

[project.optional-dependencies]
extra = [{extra}]
"""


def _checkout(root, packages):
  for name, (deps, extra) in packages.items():
    folder = root / 'packages' / name
    folder.mkdir(parents=True)
    (folder / 'pyproject.toml').write_text(
      PYPROJECT.format(
        name=name,
        deps=', '.join(f'"{d}"' for d in deps),
        extra=', '.join(f'"{d}"' for d in extra),
      )
    )
  return root


@pytest.fixture
def checkout(tmp_path, monkeypatch):
  root = _checkout(
    tmp_path / 'repo',
    {
      'core': (['jax>=0.7'], []),
      'serialization': (['flax-core>=0.12.0,<0.13', 'msgpack'], []),
      'training': (
        ['flax-core>=0.12.0', 'flax-serialization>=0.12.0', 'optax'],
        ["flax-nnx>=0.12.0 ; python_version >= '3.11'"],
      ),
      'nnx': (['flax-core>=0.12.0'], []),
    },
  )
  monkeypatch.setattr(_install, 'checkout_root', lambda: root)
  monkeypatch.setattr(_install, '_installed', lambda d: d == 'flax-core')
  return root


def test_index_install_names_the_distribution(monkeypatch):
  monkeypatch.setattr(_install, 'checkout_root', lambda: None)
  assert _install.install_command('flax-training') == (
    'pip install flax-training'
  )
  assert _install.install_command('flax-nnx', ('bridge',)) == (
    "pip install 'flax-nnx[bridge]'"
  )


def test_checkout_install_lists_missing_siblings(checkout, monkeypatch):
  monkeypatch.chdir(checkout)
  assert _install.install_command('flax-training') == (
    'pip install ./packages/training ./packages/serialization'
  )
  assert _install.install_command('flax-training', ('extra',)) == (
    "pip install './packages/training[extra]' ./packages/serialization "
    './packages/nnx'
  )
  # Siblings that are installed already are left out.
  monkeypatch.setattr(_install, '_installed', lambda d: d != 'flax-training')
  assert _install.install_command('flax-training') == (
    'pip install ./packages/training'
  )


def test_checkout_paths_are_absolute_elsewhere(checkout, tmp_path, monkeypatch):
  (tmp_path / 'elsewhere').mkdir()
  monkeypatch.chdir(tmp_path / 'elsewhere')
  command = _install.install_command('flax-serialization')
  assert command == f'pip install {checkout / "packages" / "serialization"}'


def test_unknown_distribution_in_checkout(checkout):
  assert _install.install_command('flax-other') == 'pip install flax-other'


class _Dist:
  def __init__(self, direct_url):
    self.direct_url = direct_url

  def read_text(self, name):
    assert name == 'direct_url.json'
    return None if self.direct_url is None else json.dumps(self.direct_url)


@pytest.mark.parametrize(
  'info, found',
  [
    ({'dir_info': {'editable': True}}, True),
    ({'dir_info': {}}, True),
    ({'archive_info': {}}, False),
    (None, False),
  ],
)
def test_checkout_root_from_direct_url(tmp_path, monkeypatch, info, found):
  root = _checkout(tmp_path / 'a b', {'core': ([], [])})
  url = (root / 'packages' / 'core').as_uri()
  if info is not None:
    info = {'url': url, **info}
  monkeypatch.setattr(
    _install.importlib.metadata, 'distribution', lambda name: _Dist(info)
  )
  assert _install.checkout_root() == (root if found else None)


def test_missing_subpackage_error_uses_the_command(checkout, monkeypatch):
  monkeypatch.chdir(checkout)
  error = flax._missing('flax.nnx')
  assert str(error).endswith('Install it with `pip install ./packages/nnx`.')
  assert os.fspath(checkout) not in str(error)
