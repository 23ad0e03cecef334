"""Tests of the shared `flax` root module."""

import importlib.metadata
import subprocess
import sys

import pytest

import flax


def run(code):
  return subprocess.run(
    [sys.executable, '-c', code], capture_output=True, text=True, check=True
  ).stdout


def test_import_flax_is_lazy():
  out = run(
    'import sys, flax\n'
    'print(sorted(m for m in sys.modules if m.startswith("flax.")))\n'
    'print("jax" in sys.modules)\n'
  )
  subpackages, jax_loaded = out.splitlines()
  assert subpackages == "['flax.version']"
  assert jax_loaded == 'False'


def test_version_and_config():
  try:
    drop_in = importlib.metadata.version('flax')
  except importlib.metadata.PackageNotFoundError:
    drop_in = None
  # The `flax` distribution's version when it is installed, else the Flax
  # release the packages reproduce with the project's local label.
  assert flax.__version__ == (drop_in or '0.12.8+modular')
  assert flax.__version__.split('+')[0] == flax.version.COMPATIBLE_VERSION
  assert flax.version.__version__ == flax.__version__
  assert '__version__' in dir(flax)
  assert flax.config.flax_return_frozendict is False
  assert 'config' in dir(flax) and 'linen' in dir(flax)


def test_lazy_subpackage_attribute():
  out = run('import flax\nprint(flax.plugins.__name__)')
  assert out.strip() == 'flax.plugins'


def test_missing_subpackage_names_distribution():
  with pytest.raises(ModuleNotFoundError, match="'flax-nnx'.*pip install"):
    flax._MissingSubpackageFinder.find_spec('flax.nnx')
  assert flax._MissingSubpackageFinder.find_spec('flax.unknown') is None
  assert flax._MissingSubpackageFinder.find_spec('other.nnx') is None


def test_unknown_attribute():
  with pytest.raises(AttributeError, match='no attribute'):
    flax.not_a_subpackage


def test_path_spans_installed_distributions():
  import flax.plugins  # noqa: F401

  assert any(p.endswith('flax') for p in flax.__path__)
