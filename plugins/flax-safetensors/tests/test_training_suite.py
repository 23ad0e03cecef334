"""The project's checkpoint-backend suite of flax-training, run against the
safetensors backend: the protocol contract plus ``flax.training.checkpoints``
(keep, keep_every_n_steps, outdated steps, background saves, a failed save,
two saves racing).

The suite lives in the repository (``tests/training``); this module loads it
from there.
"""

import importlib.util
import pathlib

import numpy as np
import pytest
from flax import plugins
from flax.training import checkpoints

from flax_safetensors import SafetensorsBackend

_SUITE = (
  pathlib.Path(__file__).resolve().parents[3]
  / 'tests'
  / 'training'
  / 'test_checkpoint_backends.py'
)
_spec = importlib.util.spec_from_file_location('_training_suite', _SUITE)
_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_suite)


class TestTrainingSuite(_suite.TestCheckpointBackends):
  @pytest.fixture
  def backend(self):
    return SafetensorsBackend()

  def test_checkpoints_module_restores_by_detection(self, backend, tmp_path):
    # A third-party format is detected once its backend is selected.
    checkpoints.save_checkpoint(
      tmp_path, {'v': np.arange(3)}, 7, backend=backend
    )
    with plugins.use_backend('checkpoint', 'safetensors'):
      raw = checkpoints.restore_checkpoint(tmp_path, None)
      one = checkpoints.restore_checkpoint(
        tmp_path / 'checkpoint_7', {'v': np.zeros(3, int)}
      )
      with pytest.raises(ValueError, match='Matching checkpoint not found'):
        checkpoints.restore_checkpoint(tmp_path, None, step=8)
    np.testing.assert_array_equal(raw['v'], np.arange(3))
    np.testing.assert_array_equal(one['v'], np.arange(3))
    with pytest.raises(ValueError, match='not a checkpoint of any known'):
      checkpoints.restore_checkpoint(tmp_path, None)
