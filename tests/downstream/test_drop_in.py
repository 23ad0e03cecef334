"""The ``flax`` distribution as a drop-in for Flax, under a library from the
package index that requires ``flax``.

Run by ``nox -s downstream``, which installs the ``flax`` distribution and
the seven packages from their wheels, then flax-metrics (``flax>=0.10.7``)
with pip, as a user would. pip found the project's ``flax`` installed and
kept it: these tests check that what runs is the project.
"""

import importlib.metadata
import json
import pathlib
import subprocess
import sys

import flax
import jax.numpy as jnp
from flax import nnx

LIBRARY = 'flax-metrics'
PACKAGES = (
  'core',
  'serialization',
  'spmd',
  'linen',
  'nnx',
  'layers',
  'training',
)


def _pip(*args):
  return subprocess.run(
    [sys.executable, '-m', 'pip', *args],
    capture_output=True,
    text=True,
    check=False,
  )


def _owner(module_file):
  """The installed distribution whose files include ``module_file``."""
  path = pathlib.Path(module_file).resolve()
  for dist in importlib.metadata.distributions():
    for file in dist.files or ():
      if pathlib.Path(dist.locate_file(file)).resolve() == path:
        return dist.metadata['Name']
  return None


def test_the_project_is_what_import_flax_loads():
  assert _owner(flax.__file__) == 'flax-core'
  from flax import linen

  assert _owner(linen.__file__) == 'flax-linen'
  assert _owner(nnx.__file__) == 'flax-nnx'
  # The `flax` distribution ships no code (no Flax files were installed
  # over the project's).
  drop_in = importlib.metadata.distribution('flax')
  assert all('.dist-info' in str(f) for f in drop_in.files)
  required = {
    r.split('[')[0].split('<')[0].split('>')[0] for r in drop_in.requires
  }
  assert required == {f'flax-{p}' for p in PACKAGES}


def test_metadata_version_is_flax_version():
  version = importlib.metadata.version('flax')
  assert flax.__version__ == version
  public, _, local = version.partition('+')
  assert public == flax.version.COMPATIBLE_VERSION == '0.12.8'
  assert local.split('.')[0] == 'modular'
  assert local.split('.')[1].isdigit()


def test_pip_check_is_clean():
  result = _pip('check')
  assert result.returncode == 0, result.stdout + result.stderr
  assert 'No broken requirements found.' in result.stdout


def test_requirements_on_flax_are_satisfied_as_installed():
  """pip would install nothing for requirements that libraries declare."""
  for requirement in ('flax>=0.10', 'flax>=0.12.8', 'flax==0.12.8', LIBRARY):
    result = _pip(
      'install', '--dry-run', '--quiet', '--report', '-', requirement
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report['install'] == [], (requirement, report['install'])


def test_the_library_runs_on_the_project():
  """flax-metrics' own example and an nnx.MultiMetric under nnx.jit give
  what they give with Flax 0.12.8."""
  from flax_metrics import MeanSquaredError, Precision, Recall

  labels = jnp.asarray([0, 0, 0, 1, 1, 1])
  logits = jnp.asarray([-1, -2, 2, 1, -1, -2])
  mask = jnp.asarray([True, True, True, True, False, True])
  recall = Recall().update(labels=labels, logits=logits).compute()
  assert abs(float(recall) - 1 / 3) < 1e-6
  masked = Recall().update(labels=labels, logits=logits, mask=mask)
  assert float(masked.compute()) == 0.5
  metrics = nnx.MultiMetric(recall=Recall(), precision=Precision())

  @nnx.jit
  def step(metrics, labels, logits):
    metrics.update(labels=labels, logits=logits)

  for _ in range(2):
    step(metrics, labels, logits)
  computed = {k: float(v) for k, v in metrics.compute().items()}
  assert abs(computed['recall'] - 1 / 3) < 1e-6
  assert computed['precision'] == 0.5
  mse = MeanSquaredError()
  mse.update(target=jnp.arange(4.0), prediction=jnp.arange(4.0) + 0.5)
  assert float(mse.compute()) == 0.25
