"""Training and checkpointing across 2 processes x 4 CPU devices.

Each test starts real processes that join one JAX job through
``jax.distributed`` (see ``launch.py`` and ``worker.py``) and compares what
they report with the same program run in one process with 8 devices. Run by
``nox -s multihost``.
"""

import numpy as np
import pytest

from launch import LaunchError, launch

RTOL = 1e-5  # collectives across processes may reorder float sums


def _one(task, workdir, processes):
  devices = 8 // processes
  results = [r.result for r in launch(task, workdir, processes, devices)]
  for other in results[1:]:  # every process reports the same
    assert other == results[0]
  return results[0]


@pytest.fixture(scope='module')
def single(tmp_path_factory):
  """5 training steps of each API in one process with 8 devices."""
  work = tmp_path_factory.mktemp('single')
  return {api: _one(f'{api}-train', work, 1) for api in ('nnx', 'linen')}


def _check_same(got, want, first=0):
  n = len(got['losses'])
  np.testing.assert_allclose(
    got['losses'], want['losses'][first : first + n], rtol=RTOL
  )
  assert got['specs'] == want['specs']


@pytest.mark.parametrize('api', ['nnx', 'linen'])
def test_two_processes_train_like_one(api, single, tmp_path):
  got = _one(f'{api}-train', tmp_path, 2)
  _check_same(got, single[api])
  np.testing.assert_allclose(got['params'], single[api]['params'], rtol=RTOL)


def test_parameters_are_sharded_over_the_model_axis(single):
  assert single['nnx']['specs'] == {
    'l1/bias/value': "P('model',)",
    'l1/kernel/value': "P(None, 'model')",
    'l2/bias/value': 'P()',
    'l2/kernel/value': "P('model',)",
  }
  assert single['linen']['specs'] == {
    'Dense_0/bias': "P('model',)",
    'Dense_0/kernel': "P(None, 'model')",
    'Dense_1/bias': 'P()',
    'Dense_1/kernel': "P('model',)",
  }


@pytest.mark.parametrize('api', ['nnx', 'linen'])
@pytest.mark.parametrize('writers,readers', [(2, 1), (1, 2)])
def test_checkpoint_moves_between_process_counts(
  api, writers, readers, single, tmp_path
):
  saved = _one(f'{api}-save', tmp_path, writers)
  _check_same(saved, single[api])
  resumed = _one(f'{api}-resume', tmp_path, readers)
  _check_same(resumed, single[api], first=3)
  np.testing.assert_allclose(
    resumed['params'], single[api]['params'], rtol=RTOL
  )
  if api == 'linen':
    assert resumed['step'] == 5


def test_a_dead_process_stops_the_run_with_its_output(tmp_path):
  with pytest.raises(LaunchError, match=r'process 1 of 2 exited with status 3'):
    launch('die', tmp_path, 2, 4, timeout=120)


def test_an_unreachable_coordinator_fails_within_the_timeout(tmp_path):
  # Only process 1 starts: nobody serves the coordinator's port.
  with pytest.raises(LaunchError, match=r'process 1 of 2 exited'):
    launch(
      'nnx-train',
      tmp_path,
      2,
      4,
      timeout=120,
      only=[1],
      env={'MH_INIT_TIMEOUT': '5'},
    )


def test_replicate_uses_each_process_local_devices(tmp_path):
  results = [r.result for r in launch('jax-utils', tmp_path, 2, 4)]
  assert [r['process_index'] for r in results] == [0, 1]
  for r in results:
    assert r['shape'] == [4, 3]
    assert r['on_local_devices'] is True
    assert r['unreplicated'] == [0.0, 1.0, 2.0]
