"""Exercises the fixture plugin distributions, installed by `nox -s plugins`.

Each check runs in a fresh interpreter, because which plugins are enabled is
read from the environment when the registry is built.
"""

import importlib.metadata
import os
import subprocess
import sys

import pytest

FIXTURES = (
  'flax-fixture-good',
  'flax-fixture-broken',
  'flax-fixture-conflict',
  'flax-fixture-shadow',
  'flax-fixture-malformed',
  'flax-fixture-slow',
  'flax-fixture-broken-layer',
)


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


def run(code, enable=FIXTURES, strict=False, check=True, env=None):
  """Runs ``code`` in a fresh interpreter with only ``enable`` fixtures."""
  env = {**os.environ, **(env or {})}
  env.pop('FLAX_DISABLE_PLUGINS', None)
  env.pop('FLAX_PLUGINS_STRICT', None)
  disable = [f for f in FIXTURES if f not in enable]
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
    enable=('flax-fixture-good',),
  )
  assert result.stdout.split('\n')[:3] == ['[2.0, 2.0, 2.0]', 'True', 'False']


def test_report_lists_every_fixture():
  result = run(
    'from flax.plugins.__main__ import report; report()',
    enable=(
      'flax-fixture-good',
      'flax-fixture-broken',
      'flax-fixture-conflict',
    ),
  )
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
  assert (
    'flax-fixture-malformed 0.1.0 [third-party] ok (1 records skipped)'
    in (module.stdout)
  )


def test_broken_plugin_warns_and_nnx_still_works():
  result = run(
    'from flax import nnx\n'
    'print(type(nnx.Rngs(0)).__name__)\n'
    'print(nnx.ScaleLayer.__name__)\n',
    enable=('flax-fixture-good', 'flax-fixture-broken'),
  )
  assert result.stdout.split() == ['Rngs', 'ScaleLayer']
  assert 'FlaxPluginWarning' in result.stderr
  assert "'flax-fixture-broken'" in result.stderr


def test_broken_plugin_strict_mode_fails():
  result = run(
    'from flax import nnx\nnnx.ScaleLayer\n',
    enable=('flax-fixture-good', 'flax-fixture-broken'),
    strict=True,
    check=False,
  )
  assert result.returncode != 0
  assert 'PluginError' in result.stderr
  assert "'flax-fixture-broken'" in result.stderr


def test_conflicting_plugin_names_both_distributions():
  result = run(
    'from flax.nnx import ScaleLayer\n',
    enable=('flax-fixture-good', 'flax-fixture-conflict'),
    check=False,
  )
  assert result.returncode != 0
  assert 'PluginConflictError' in result.stderr
  assert "'flax-fixture-conflict'" in result.stderr
  assert "'flax-fixture-good'" in result.stderr


def test_disabling_the_conflict_resolves_it():
  result = run(
    'from flax.nnx import ScaleLayer\nprint(ScaleLayer.__module__)\n',
    enable=('flax-fixture-good',),
  )
  assert result.stdout.strip() == 'flax_fixture_good.layers'


def test_first_party_names_win_over_a_shadowing_plugin():
  result = run(
    'import flax\n'
    'from flax import linen as nn, nnx, plugins\n'
    'print(nnx.Linear.__module__, nn.Dense.__module__, nnx.Rngs.__module__)\n'
    'print(nnx.ShadowExtra)\n'
    'print(type(plugins.select_backend("checkpoint", "msgpack")).__name__)\n'
    'print(plugins.backend_names("checkpoint")[:1])\n',
    enable=('flax-fixture-shadow',),
  )
  lines = result.stdout.splitlines()
  assert lines == [
    'flax.layers.nnx.linear flax.layers.linen.linear flax.nnx.rnglib',
    'extra from flax-fixture-shadow',
    'MsgpackBackend',
    "['msgpack']",
  ]
  warnings = [
    line for line in result.stderr.splitlines() if 'FlaxPluginWarning' in line
  ]
  assert len(warnings) == 4, result.stderr
  for what, owner in (
    ('flax.nnx.Linear', 'flax-layers'),
    ('flax.linen.Dense', 'flax-layers'),
    ("checkpoint backend 'msgpack'", 'flax-serialization'),
  ):
    assert (
      f"Flax plugin 'flax-fixture-shadow' provides {what}, which the "
      f"first-party distribution '{owner}' provides" in result.stderr
    )
  assert (
    "Flax plugin 'flax-fixture-shadow' exports flax.nnx.Rngs, a name that "
    'flax.nnx already defines' in result.stderr
  )


def test_malformed_record_is_skipped_and_named():
  result = run(
    'from flax import nnx\n'
    'print(nnx.WellFormed)\n'
    'print("WellFormed" in dir(nnx), 123 in dir(nnx))\n',
    enable=('flax-fixture-malformed',),
  )
  assert result.stdout.splitlines() == ['well formed', 'True False']
  assert "Flax plugin 'flax-fixture-malformed' (0.1.0)" in result.stderr
  assert 'name must be a str, got int' in result.stderr


def test_slow_plugin_is_not_imported_for_first_party_lookups(tmp_path):
  marker = tmp_path / 'marker'
  result = run(
    'import os, pathlib, tempfile\n'
    'import flax\n'
    'from flax import linen as nn, nnx\n'
    'from flax.training import checkpoints\n'
    'marker = pathlib.Path(os.environ["FLAX_FIXTURE_SLOW_MARKER"])\n'
    'nnx.Linear, nn.Dense, nnx.Rngs(0), nnx.Optimizer\n'
    'with flax.config.temp_flip_flag("use_orbax_checkpointing", False):\n'
    '  checkpoints.save_checkpoint(tempfile.mkdtemp(), {"w": 1}, step=1)\n'
    'print(marker.exists())\n'
    'print(nnx.SlowThing)\n'
    'print(marker.read_text().split())\n',
    enable=('flax-fixture-slow',),
    env={'FLAX_FIXTURE_SLOW_MARKER': str(marker)},
  )
  assert result.stdout.splitlines() == ['False', 'slow', "['imported']"]


def test_broken_layer_plugin_behaves_as_a_missing_name():
  result = run(
    'import inspect, pydoc\n'
    'from flax import nnx, plugins\n'
    'print(hasattr(nnx, "BrokenLayer"), getattr(nnx, "BrokenLayer", 7))\n'
    'print("BrokenLayer" in dict(inspect.getmembers(nnx)))\n'
    'print("Linear" in pydoc.render_doc(nnx, renderer=pydoc.plaintext))\n'
    'try:\n'
    '  nnx.BrokenLayer\n'
    'except AttributeError as e:\n'
    '  print(type(e).__name__, isinstance(e, plugins.PluginImportError))\n'
    '  print(e)\n'
    'try:\n'
    '  from flax.nnx import BrokenLayer\n'
    'except ImportError as e:\n'
    '  print(type(e).__name__)\n',
    enable=('flax-fixture-broken-layer',),
  )
  lines = result.stdout.splitlines()
  assert lines[:4] == ['False 7', 'False', 'True', 'PluginImportError True']
  assert lines[4] == (
    "flax.nnx.BrokenLayer is provided by 'flax-fixture-broken-layer' as "
    "'flax_fixture_broken_layer.layers:BrokenLayer', which failed to import: "
    'ModuleNotFoundError: No module named '
    "'a_layer_dependency_that_is_not_installed'"
  )
  assert lines[5] == 'ImportError'


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
