"""One contract, three backends: msgpack, Orbax and a test fixture.

Every test runs against each backend, both on the backend protocol (the
``CheckpointBackendContract`` of flax-serialization) and through
``flax.training.checkpoints``, which drives every backend by that protocol
alone.
"""

import os
import pickle

import numpy as np
import pytest

from flax import errors
from flax.core.state_dict import from_state_dict, to_state_dict
from flax.serialization import backend_utils
from flax.serialization.testing import CheckpointBackendContract
from flax.training import _orbax, checkpoints


class PickleDirBackend(backend_utils.CheckpointBackend):
  """A third-party style backend: a directory holding a pickled state dict."""

  name = 'pickle-dir'
  MARKER = 'state.pickle'

  def write(self, path, payload):
    os.mkdir(path)
    with open(os.path.join(path, self.MARKER), 'wb') as f:
      pickle.dump(to_state_dict(payload), f)

  def read(self, path, target=None):
    with open(os.path.join(path, self.MARKER), 'rb') as f:
      state = pickle.load(f)
    if target is None:
      return state
    return backend_utils.restore_abstract_leaves(
      target, from_state_dict(target, state)
    )

  def is_checkpoint(self, path):
    return os.path.isfile(os.path.join(path, self.MARKER))


BACKENDS = {
  'msgpack': backend_utils.MsgpackBackend,
  'orbax': _orbax.OrbaxBackend,
  'fixture': PickleDirBackend,
}


def _refused(backend):
  """What a save without overwrite raises when the backend refuses it."""
  if backend.allows_older_steps:
    return pytest.raises(ValueError, match='already exists')
  return pytest.raises(errors.InvalidCheckpointError, match='outdated')


class TestCheckpointBackends(CheckpointBackendContract):
  @pytest.fixture(params=sorted(BACKENDS))
  def backend(self, request):
    return BACKENDS[request.param]()

  def test_checkpoints_module_keeps_and_prunes(self, backend, tmp_path):
    for step in range(5):
      checkpoints.save_checkpoint(
        tmp_path, {'s': np.array(step)}, step, keep=2, backend=backend
      )
    assert backend.steps(tmp_path) == [3, 4]
    assert checkpoints.available_steps(tmp_path) == [3, 4]
    assert sorted(os.listdir(tmp_path)) == ['checkpoint_3', 'checkpoint_4']
    restored = checkpoints.restore_checkpoint(
      tmp_path, {'s': np.array(0)}, backend=backend
    )
    assert int(restored['s']) == 4

  def test_checkpoints_module_keep_every_n_steps(self, backend, tmp_path):
    for step in range(6):
      checkpoints.save_checkpoint(
        tmp_path,
        {'s': np.array(step)},
        step,
        keep=1,
        keep_every_n_steps=2,
        backend=backend,
      )
    assert backend.steps(tmp_path) == [1, 3, 5]

  def test_checkpoints_module_outdated_and_overwrite(self, backend, tmp_path):
    for step in (1, 2, 3):
      checkpoints.save_checkpoint(
        tmp_path, {'v': np.array(step)}, step, keep=5, backend=backend
      )
    if backend.allows_older_steps:
      # Orbax's rule: an existing step is refused, an older one is added.
      with pytest.raises(ValueError, match='checkpoint_2 already exists'):
        checkpoints.save_checkpoint(
          tmp_path, {'v': np.array(0)}, 2, backend=backend
        )
      checkpoints.save_checkpoint(
        tmp_path, {'v': np.array(0)}, 0, keep=5, backend=backend
      )
      assert backend.steps(tmp_path) == [0, 1, 2, 3]
      # keep prunes by step, oldest first
      checkpoints.save_checkpoint(
        tmp_path, {'v': np.array(4)}, 4, keep=3, backend=backend
      )
      assert backend.steps(tmp_path) == [2, 3, 4]
    else:
      with pytest.raises(errors.InvalidCheckpointError, match='outdated'):
        checkpoints.save_checkpoint(
          tmp_path, {'v': np.array(0)}, 2, backend=backend
        )
      with pytest.raises(errors.InvalidCheckpointError, match='outdated'):
        checkpoints.save_checkpoint(
          tmp_path, {'v': np.array(0)}, 0, backend=backend
        )
    checkpoints.save_checkpoint(
      tmp_path, {'v': np.array(9)}, 2, keep=5, overwrite=True, backend=backend
    )
    older = [s for s in backend.steps(tmp_path) if s < 2]
    assert backend.steps(tmp_path) == older + [2]
    assert int(backend.restore(tmp_path, 2, {'v': np.array(0)})['v']) == 9

  def test_checkpoints_module_restores_by_detection(self, backend, tmp_path):
    checkpoints.save_checkpoint(
      tmp_path, {'v': np.arange(3)}, 7, backend=backend
    )
    # The format is recognised without naming the backend (the fixture is
    # not registered, so it is named as the backend asked for).
    asked = backend if isinstance(backend, PickleDirBackend) else None
    raw = checkpoints.restore_checkpoint(tmp_path, None, backend=asked)
    np.testing.assert_array_equal(raw['v'], np.arange(3))
    one = checkpoints.restore_checkpoint(
      tmp_path / 'checkpoint_7', {'v': np.zeros(3, int)}, backend=asked
    )
    np.testing.assert_array_equal(one['v'], np.arange(3))
    with pytest.raises(ValueError, match='Matching checkpoint not found'):
      checkpoints.restore_checkpoint(tmp_path, None, step=8, backend=asked)

  def test_async_save_captures_target_at_call(self, backend, tmp_path):
    manager = checkpoints.AsyncManager()
    tree = {'w': np.arange(4)}
    checkpoints.save_checkpoint(
      tmp_path, tree, 0, async_manager=manager, backend=backend
    )
    tree['w'][:] = -1
    manager.wait_previous_save()
    restored = backend.restore(tmp_path, target={'w': np.zeros(4, int)})
    np.testing.assert_array_equal(restored['w'], np.arange(4))
    with _refused(backend):
      checkpoints.save_checkpoint(
        tmp_path, tree, 0, async_manager=manager, backend=backend
      )

  def test_failed_save_keeps_the_last_good_checkpoint(
    self, backend, tmp_path, monkeypatch
  ):
    checkpoints.save_checkpoint(
      tmp_path, {'v': np.array(1)}, 1, backend=backend
    )
    real_write = type(backend).write

    def failing_write(self, path, payload):
      real_write(self, path, payload)  # the data is all there ...
      raise OSError('disk full')  # ... but the save fails anyway

    monkeypatch.setattr(type(backend), 'write', failing_write)
    for overwrite, step in ((False, 2), (True, 1)):
      with pytest.raises(OSError, match='disk full'):
        checkpoints.save_checkpoint(
          tmp_path,
          {'v': np.array(5)},
          step,
          overwrite=overwrite,
          backend=backend,
        )
      assert os.listdir(tmp_path) == ['checkpoint_1']
    monkeypatch.undo()
    assert int(backend.restore(tmp_path, target={'v': np.array(0)})['v']) == 1

  def test_loser_of_a_race_is_refused(self, backend, tmp_path, monkeypatch):
    real_write = type(backend).write
    raced = []
    # While step 1 is being written, another save publishes a step that
    # refuses it: step 2 (msgpack: outdated), or step 1 itself (Orbax:
    # older steps are fine, an existing one is not).
    winner = 1 if backend.allows_older_steps else 2

    def write_while_another_saves(self, path, payload):
      real_write(self, path, payload)
      if not raced:
        raced.append(True)
        checkpoints.save_checkpoint(
          tmp_path, {'v': np.array(2)}, winner, keep=5, backend=self
        )

    monkeypatch.setattr(type(backend), 'write', write_while_another_saves)
    with _refused(backend):
      checkpoints.save_checkpoint(
        tmp_path, {'v': np.array(1)}, 1, keep=5, backend=backend
      )
    monkeypatch.undo()
    # The winner is whole; the loser left nothing behind.
    assert os.listdir(tmp_path) == [f'checkpoint_{winner}']
    assert int(backend.restore(tmp_path, target={'v': np.array(0)})['v']) == 2
