"""flax.training.checkpoints with the msgpack and Orbax backends."""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import optax
import pytest

import flax
import jax
import jax.numpy as jnp
from flax import errors, plugins, serialization
from flax.training import checkpoints, train_state


@pytest.fixture(autouse=True)
def msgpack_by_default():
  with flax.config.temp_flip_flag('use_orbax_checkpointing', False):
    yield


def steps_on_disk(d, prefix='checkpoint_'):
  return checkpoints.available_steps(d, prefix=prefix, step_type=float)


def test_save_returns_path_and_restores(tmp_path):
  path = checkpoints.save_checkpoint(tmp_path, {'a': np.arange(3)}, step=5)
  assert path == os.path.join(str(tmp_path), 'checkpoint_5')
  restored = checkpoints.restore_checkpoint(tmp_path, target={'a': np.zeros(3)})
  np.testing.assert_array_equal(restored['a'], [0, 1, 2])


def test_relative_paths(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  path = checkpoints.save_checkpoint('tmp/ckpts', [1, 'two'], step=0)
  assert path == 'tmp/ckpts/checkpoint_0'
  assert checkpoints.latest_checkpoint('tmp/ckpts') == path
  assert checkpoints.restore_checkpoint('tmp/ckpts', None) == {
    '0': 1,
    '1': 'two',
  }


def test_keep_and_keep_every_n_steps(tmp_path):
  for step in range(5):
    checkpoints.save_checkpoint(
      tmp_path, {'s': step}, step, prefix='test_', keep=3, keep_every_n_steps=2
    )
  # Step 0 is never kept by keep_every_n_steps (as in Flax).
  assert sorted(os.listdir(tmp_path)) == [
    'test_1',
    'test_2',
    'test_3',
    'test_4',
  ]
  for step in range(5, 10):
    checkpoints.save_checkpoint(tmp_path, {'s': step}, step, keep=2)
  assert steps_on_disk(tmp_path) == [8, 9]
  assert steps_on_disk(tmp_path, 'test_') == [1, 2, 3, 4]


def test_existing_or_older_step_needs_overwrite(tmp_path):
  checkpoints.save_checkpoint(tmp_path, {'v': 1}, step=3, keep=5)
  with pytest.raises(errors.InvalidCheckpointError, match='checkpoint_3'):
    checkpoints.save_checkpoint(tmp_path, {'v': 2}, step=3)
  with pytest.raises(errors.InvalidCheckpointError, match='outdated'):
    checkpoints.save_checkpoint(tmp_path, {'v': 2}, step=1)
  assert checkpoints.restore_checkpoint(tmp_path, {'v': 0}) == {'v': 1}
  checkpoints.save_checkpoint(tmp_path, {'v': 4}, step=4, keep=5)
  # overwrite=True replaces the step and deletes newer checkpoints.
  checkpoints.save_checkpoint(
    tmp_path, {'v': 9}, step=3, overwrite=True, keep=5
  )
  assert steps_on_disk(tmp_path) == [3]
  assert checkpoints.restore_checkpoint(tmp_path, {'v': 0}) == {'v': 9}


def test_float_and_negative_steps_sort_naturally(tmp_path):
  for step in (0.001, 0.01, 0.1):
    checkpoints.save_checkpoint(tmp_path, {'s': step}, step, keep=9)
  assert checkpoints.latest_checkpoint(tmp_path).endswith('checkpoint_0.1')
  other = tmp_path / 'other'
  for step in (-1.0, 1.0, 1e5):
    checkpoints.save_checkpoint(other, {'s': step}, step, keep=9)
  assert checkpoints.latest_checkpoint(other).endswith('checkpoint_100000.0')
  assert checkpoints.restore_checkpoint(other, None) == {'s': 1e5}
  assert checkpoints.available_steps(other, step_type=float) == [-1.0, 1.0, 1e5]


def test_natural_sort():
  assert checkpoints.natural_sort(['ckpt_1', 'ckpt_10', 'ckpt_2']) == [
    'ckpt_1',
    'ckpt_2',
    'ckpt_10',
  ]
  assert checkpoints.natural_sort(['c_-1.0', 'c_1e5', 'c_1.0']) == [
    'c_-1.0',
    'c_1.0',
    'c_1e5',
  ]


def test_missing_checkpoints_return_target(tmp_path):
  target = {'a': 1}
  assert checkpoints.restore_checkpoint(tmp_path / 'nope', target) is target
  assert checkpoints.restore_checkpoint(tmp_path, target) is target
  assert checkpoints.latest_checkpoint(tmp_path) is None
  with pytest.raises(ValueError, match='Matching checkpoint not found'):
    checkpoints.restore_checkpoint(tmp_path, target, step=3)


def test_restore_from_a_file_path(tmp_path):
  path = checkpoints.save_checkpoint(tmp_path, jnp.arange(10), step=0)
  restored = checkpoints.restore_checkpoint(path, target=None)
  assert isinstance(restored, np.ndarray) and restored.dtype == np.int32
  np.testing.assert_array_equal(restored, np.arange(10))


def test_directory_that_is_a_file(tmp_path):
  f = tmp_path / 'file'
  f.write_bytes(b'data')
  with pytest.raises(NotADirectoryError, match='not a directory'):
    checkpoints.save_checkpoint(f, {'a': 1}, step=0)
  assert f.read_bytes() == b'data'


def test_corrupted_and_truncated_checkpoints(tmp_path):
  checkpoints.save_checkpoint(tmp_path, {'w': np.arange(50.0)}, step=1)
  path = tmp_path / 'checkpoint_1'
  data = path.read_bytes()
  for bad in (data[:-7], data[:3], b'', b'\x00garbage' * 5):
    path.write_bytes(bad)
    with pytest.raises(
      serialization.CheckpointCorruptedError, match='checkpoint_1'
    ):
      checkpoints.restore_checkpoint(tmp_path, None)


def test_train_state_roundtrip_and_custom_field(tmp_path):
  tx = optax.adam(1e-3)
  state = train_state.TrainState.create(
    apply_fn=None, params={'w': jnp.ones(3)}, tx=tx
  )
  state = state.apply_gradients(grads={'w': jnp.ones(3)})
  checkpoints.save_checkpoint(tmp_path, {'model': state}, step=1)
  raw = checkpoints.restore_checkpoint(tmp_path, None)
  assert raw['model']['step'] == 1
  assert set(raw['model']['opt_state']) == {'0', '1'}
  empty = train_state.TrainState.create(
    apply_fn=None, params={'w': jnp.zeros(3)}, tx=tx
  )
  restored = checkpoints.restore_checkpoint(tmp_path, {'model': empty})['model']
  assert isinstance(restored, train_state.TrainState)
  assert restored.tx is tx and restored.step == 1
  for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(state)):
    np.testing.assert_allclose(a, b)

  class CustomTrainState(train_state.TrainState):
    batch_stats: object = None

  custom = CustomTrainState.create(
    apply_fn=None, params={'w': jnp.zeros(3)}, tx=tx, batch_stats=np.zeros(2)
  )
  with pytest.raises(ValueError, match='Missing field batch_stats'):
    checkpoints.restore_checkpoint(tmp_path, {'model': custom})
  raw['model']['batch_stats'] = np.arange(2)
  fixed = serialization.from_state_dict({'model': custom}, raw)['model']
  assert type(fixed) is CustomTrainState
  np.testing.assert_array_equal(fixed.batch_stats, [0, 1])


def test_async_manager(tmp_path):
  manager = checkpoints.AsyncManager()
  tree = {'w': np.arange(4)}
  for step in range(3):
    checkpoints.save_checkpoint(
      tmp_path, tree, step, keep=2, async_manager=manager
    )
  manager.wait_previous_save()
  assert steps_on_disk(tmp_path) == [1, 2]
  # The tree was serialized when save_checkpoint was called.
  tree['w'][:] = -1
  checkpoints.save_checkpoint(
    tmp_path, {'w': np.arange(4)}, 3, async_manager=manager
  )
  manager.wait_previous_save()
  np.testing.assert_array_equal(
    checkpoints.restore_checkpoint(tmp_path, None)['w'], np.arange(4)
  )


def test_async_errors_surface(tmp_path):
  manager = checkpoints.AsyncManager()
  checkpoints.save_checkpoint(tmp_path, {'a': 1}, 5, async_manager=manager)
  manager.wait_previous_save()
  with pytest.raises(errors.InvalidCheckpointError):
    checkpoints.save_checkpoint(tmp_path, {'a': 1}, 5, async_manager=manager)


def test_convert_pre_linen():
  params = flax.core.freeze(
    {'Conv_0': {'w': 1}, 'Dense_1': {'Dense_3': 1, 'Dense_5': 2}, 'Dense_2': 3}
  )
  converted = checkpoints.convert_pre_linen(params)
  assert isinstance(converted, flax.core.FrozenDict)
  assert flax.core.unfreeze(converted) == {
    'Conv_0': {'w': 1},
    'Dense_0': {'Dense_0': 1, 'Dense_1': 2},
    'Dense_1': 3,
  }
  assert checkpoints.convert_pre_linen(converted) == converted


def test_convert_pre_linen_orders_numbers_naturally():
  converted = checkpoints.convert_pre_linen(
    {'Dense_10': 1, 'Dense_9': 2, 'Dense_2': 3, 'bias': 4, 'Dense': 5}
  )
  assert list(converted.items()) == [
    ('Dense', 5),
    ('Dense_0', 3),
    ('Dense_1', 2),
    ('Dense_2', 1),
    ('bias', 4),
  ]
  # Prefixes may contain underscores; leading zeros are dropped.
  converted = checkpoints.convert_pre_linen(
    {'x_2': 1, 'x_0': 2, 'x_1_1': 3, 'a_b_3': 4, 'a_01': 5}
  )
  assert converted == {'x_0': 2, 'x_1_0': 3, 'x_1': 1, 'a_b_0': 4, 'a_0': 5}
  # Only dicts are converted; other leaves pass through untouched.
  leaf = [{'Dense_4': 1}]
  assert checkpoints.convert_pre_linen({'D_1': leaf})['D_0'] is leaf
  assert checkpoints.convert_pre_linen(3) == 3


KILL_SCRIPT = textwrap.dedent(
  """
  import os, sys, time
  import numpy as np
  import flax
  from flax.training import checkpoints
  flax.config.update('flax_use_orbax_checkpointing', False)
  d = sys.argv[1]
  checkpoints.save_checkpoint(d, {'w': np.full(1000, 1.0)}, step=1)
  real_write = None
  import io
  class SlowFile(io.FileIO):
    def write(self, data):
      n = super().write(bytes(data)[: len(data) // 2])
      self.flush()
      print('WRITING', flush=True)
      time.sleep(600)
      return n
  import builtins
  real_open = builtins.open
  def slow_open(path, mode='r', *a, **k):
    if 'w' in mode and 'checkpoint_' in os.fspath(path):
      return SlowFile(path, 'w')
    return real_open(path, mode, *a, **k)
  builtins.open = slow_open
  checkpoints.save_checkpoint(d, {'w': np.full(1000, 2.0)}, step=2)
  """
)


def test_killed_during_save_keeps_previous_checkpoint(tmp_path):
  proc = subprocess.Popen(
    [sys.executable, '-c', KILL_SCRIPT, str(tmp_path)],
    stdout=subprocess.PIPE,
    env={**os.environ, 'JAX_PLATFORMS': 'cpu'},
  )
  try:
    line = proc.stdout.readline()
    assert line.strip() == b'WRITING'
  finally:
    proc.kill()
    proc.wait()
    proc.stdout.close()
  # The half-written step 2 is only a temporary file.
  assert checkpoints.available_steps(tmp_path) == [1]
  restored = checkpoints.restore_checkpoint(tmp_path, {'w': np.zeros(1000)})
  np.testing.assert_array_equal(restored['w'], np.full(1000, 1.0))
  # A new save works despite the leftover temporary file.
  checkpoints.save_checkpoint(tmp_path, {'w': np.full(1000, 3.0)}, step=2)
  assert checkpoints.restore_checkpoint(tmp_path, None)['w'][0] == 3.0
  assert checkpoints.available_steps(tmp_path) == [2]


def test_backend_selection_by_context_and_argument(tmp_path):
  with plugins.use_backend('checkpoint', 'msgpack'):
    with flax.config.temp_flip_flag('use_orbax_checkpointing', True):
      path = checkpoints.save_checkpoint(tmp_path, {'a': 1}, step=0)
  assert os.path.isfile(path)
  path = checkpoints.save_checkpoint(
    tmp_path, {'a': 2}, step=1, keep=2, backend='orbax'
  )
  assert os.path.isdir(path)
  # Restoring detects the format of what it finds.
  assert checkpoints.restore_checkpoint(tmp_path, {'a': 0}) == {'a': 2}
  assert checkpoints.restore_checkpoint(tmp_path, {'a': 0}, step=0) == {'a': 1}


def test_orbax_backend_by_config(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  tx = optax.sgd(0.1)
  state = train_state.TrainState.create(
    apply_fn=None, params={'w': jnp.arange(3.0)}, tx=tx
  )
  ckpt = {'model': state, 'config': {'name': 'dense'}, 'data': [jnp.ones(2)]}
  with flax.config.temp_flip_flag('use_orbax_checkpointing', True):
    for step in range(3):
      path = checkpoints.save_checkpoint('rel', ckpt, step=step, keep=2)
    assert path == 'rel/checkpoint_2' and os.path.isdir(path)
    assert checkpoints.available_steps('rel') == [1, 2]
    restored = checkpoints.restore_checkpoint('rel', target=ckpt)
    assert isinstance(restored['model'], train_state.TrainState)
    np.testing.assert_array_equal(restored['model'].params['w'], [0, 1, 2])
    assert restored['config']['name'] == 'dense'
    # Without a target, leaves come back as saved (JAX arrays placed by the
    # saved sharding file, as Orbax warns; NumPy arrays; Python numbers).
    with pytest.warns(UserWarning, match='Sharding info not provided'):
      raw = checkpoints.restore_checkpoint('rel', target=None)
    assert set(raw['data']) == {'0'}
    assert isinstance(raw['data']['0'], jax.Array)
    assert isinstance(raw['model']['step'], int)
    # As Orbax: an existing step is refused, an older one is added.
    with pytest.raises(ValueError, match='rel/checkpoint_2 already exists'):
      checkpoints.save_checkpoint('rel', ckpt, step=2)
    checkpoints.save_checkpoint('rel', ckpt, step=0, keep=3)
    assert checkpoints.available_steps('rel') == [0, 1, 2]
    with pytest.raises(ValueError, match='pytree'):
      checkpoints.save_checkpoint('rel', jnp.ones(2), step=3)


def test_save_checkpoint_multiprocess_single_process(tmp_path):
  path = checkpoints.save_checkpoint_multiprocess(tmp_path, {'a': 1}, step=2)
  assert path.endswith('checkpoint_2')
  assert checkpoints.restore_checkpoint(tmp_path, None) == {'a': 1}


def test_async_manager_waits_for_slow_tasks():
  manager = checkpoints.AsyncManager()
  done = []
  manager.save_async(lambda: (time.sleep(0.05), done.append(1)))
  manager.wait_previous_save()
  assert done == [1]


def test_module_constants_of_flax():
  assert checkpoints.MP_ARRAY_POSTFIX == '_gda'
  assert checkpoints.MODULE_NUM_RE.match('Dense_12').groups() == ('Dense', '12')
