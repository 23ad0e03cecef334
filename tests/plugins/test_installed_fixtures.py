"""Exercises the fixture plugin distributions, installed by `nox -s plugins`.

Each check runs in a fresh interpreter, because which plugins are enabled is
read from the environment when the registry is built.
"""

import importlib.metadata
import os
import subprocess
import sys

import pytest

FIXTURES = ('flax-fixture-good', 'flax-fixture-broken', 'flax-fixture-conflict')


def _installed(dist):
  try:
    importlib.metadata.distribution(dist)
  except importlib.metadata.PackageNotFoundError:
    return False
  return True


if not all(map(_installed, FIXTURES)):
  pytest.fail(
    'the fixture plugins are not installed; run these tests with '
    '`nox -s plugins`',
    pytrace=False,
  )


def run(code, disable=(), strict=False, check=True):
  env = dict(os.environ)
  env.pop('FLAX_DISABLE_PLUGINS', None)
  env.pop('FLAX_PLUGINS_STRICT', None)
  if disable:
    env['FLAX_DISABLE_PLUGINS'] = ','.join(disable)
  if strict:
    env['FLAX_PLUGINS_STRICT'] = '1'
  result = subprocess.run(
    [sys.executable, '-W', 'default', '-c', code],
    capture_output=True,
    text=True,
    env=env,
  )
  if check:
    assert result.returncode == 0, result.stderr
  return result


def test_good_layer_is_reachable_from_flax_nnx():
  result = run(
    'import warnings; warnings.simplefilter("error")\n'
    'import jax.numpy as jnp\n'
    'from flax import nnx\n'
    'from flax.nnx import ScaleLayer\n'
    'layer = ScaleLayer(3, rngs=nnx.Rngs(0))\n'
    'print(layer(jnp.full((3,), 2.0)).tolist())\n'
    'print("ScaleLayer" in dir(nnx))\n'
    'import flax\n'
    'print(flax.config.flax_scale_layer_verbose)\n',
    disable=('flax-fixture-broken', 'flax-fixture-conflict'),
  )
  assert result.stdout.split('\n')[:3] == ['[2.0, 2.0, 2.0]', 'True', 'False']


def test_report_lists_every_fixture():
  result = run('from flax.plugins.__main__ import report; report()')
  out = result.stdout
  assert 'flax-fixture-good 1.2.0 [third-party] ok' in out
  assert 'flax.nnx.ScaleLayer -> flax_fixture_good.layers:ScaleLayer' in out
  assert 'flax-fixture-broken 0.0.1 [third-party] failed' in out
  assert 'a_dependency_that_is_not_installed' in out
  assert 'flax-fixture-conflict 0.3.0 [third-party] ok' in out
  assert "'flax-fixture-conflict' and 'flax-fixture-good'" in out
  module = subprocess.run(
    [sys.executable, '-m', 'flax.plugins'], capture_output=True, text=True
  )
  assert module.returncode == 0
  assert 'flax-fixture-good' in module.stdout


def test_broken_plugin_warns_and_nnx_still_works():
  result = run(
    'from flax import nnx\n'
    'print(type(nnx.Rngs(0)).__name__)\n'
    'print(nnx.ScaleLayer.__name__)\n',
    disable=('flax-fixture-conflict',),
  )
  assert result.stdout.split() == ['Rngs', 'ScaleLayer']
  assert 'FlaxPluginWarning' in result.stderr
  assert "'flax-fixture-broken'" in result.stderr


def test_broken_plugin_strict_mode_fails():
  result = run(
    'from flax import nnx\nnnx.ScaleLayer\n',
    disable=('flax-fixture-conflict',),
    strict=True,
    check=False,
  )
  assert result.returncode != 0
  assert 'PluginError' in result.stderr
  assert "'flax-fixture-broken'" in result.stderr


def test_conflicting_plugin_names_both_distributions():
  result = run(
    'from flax.nnx import ScaleLayer\n',
    disable=('flax-fixture-broken',),
    check=False,
  )
  assert result.returncode != 0
  assert 'PluginConflictError' in result.stderr
  assert "'flax-fixture-conflict'" in result.stderr
  assert "'flax-fixture-good'" in result.stderr


def test_disabling_the_conflict_resolves_it():
  result = run(
    'from flax.nnx import ScaleLayer\nprint(ScaleLayer.__module__)\n',
    disable=('flax-fixture-broken', 'flax-fixture-conflict'),
  )
  assert result.stdout.strip() == 'flax_fixture_good.layers'


def test_readme_shows_the_tested_fixture():
  import pathlib
  import re

  root = pathlib.Path(__file__).parents[2]
  readme = (root / 'README.md').read_text()
  package = root / 'tests/plugins/fixtures/good/src/flax_fixture_good'
  for name in ('layers.py', 'plugin.py'):
    block = re.search(
      rf'`src/flax_fixture_good/{name}`:\n\n```python\n(.*?)```', readme, re.S
    ).group(1)
    source = (package / name).read_text()
    body = source.split('"""', 2)[2].lstrip('\n')  # drop the module docstring
    assert block == body, name
