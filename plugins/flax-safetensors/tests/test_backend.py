"""The safetensors backend against the checkpoint-backend contract, and
through ``flax.training.checkpoints`` selected each documented way."""

import json
import os
import subprocess
import sys
import threading

import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.numpy
from flax import config
from flax import errors
from flax import plugins
from flax.serialization import CheckpointCorruptedError
from flax.serialization.testing import CheckpointBackendContract
from flax.training import checkpoints

from flax_safetensors import CHECKPOINT_FILE
from flax_safetensors import SafetensorsBackend
from flax_safetensors import safetensors_backend


class TestContract(CheckpointBackendContract):
  def make_backend(self):
    return SafetensorsBackend()


def _is_ours(path):
  return os.path.isfile(os.path.join(path, CHECKPOINT_FILE))


def test_registered_under_its_name():
  assert plugins.select_backend('checkpoint', 'safetensors') is (
    safetensors_backend
  )
  assert 'safetensors' in plugins.backend_names('checkpoint')
  # Below msgpack: installing the plugin does not change the default.
  assert plugins.backend_names('checkpoint').index('msgpack') < (
    plugins.backend_names('checkpoint').index('safetensors')
  )


def test_selected_by_argument(tmp_path):
  tree = {'w': np.arange(4, dtype=np.float32), 'step': 3}
  path = checkpoints.save_checkpoint(tmp_path, tree, 3, backend='safetensors')
  assert _is_ours(path)
  restored = checkpoints.restore_checkpoint(
    tmp_path, {'w': np.zeros(4, np.float32), 'step': 0}, backend='safetensors'
  )
  np.testing.assert_array_equal(restored['w'], tree['w'])
  assert restored['step'] == 3


def test_selected_by_context(tmp_path):
  with plugins.use_backend('checkpoint', 'safetensors'):
    path = checkpoints.save_checkpoint(tmp_path, {'v': np.ones(2)}, 1)
    raw = checkpoints.restore_checkpoint(tmp_path, None)
  assert _is_ours(path)
  np.testing.assert_array_equal(raw['v'], np.ones(2))


def test_selected_by_config(tmp_path):
  with config.temp_flip_flag('checkpoint_backend', 'safetensors'):
    path = checkpoints.save_checkpoint(tmp_path, {'v': np.ones(2)}, 1)
    raw = checkpoints.restore_checkpoint(tmp_path, None)
  assert _is_ours(path)
  np.testing.assert_array_equal(raw['v'], np.ones(2))


def test_file_is_plain_safetensors(tmp_path):
  tree = {
    'params': {'Dense_0': {'kernel': np.ones((2, 3), np.float32)}},
    'opt': [np.arange(2), 0.5],
  }
  safetensors_backend.save(tmp_path, 0, tree)
  file = tmp_path / 'checkpoint_0' / CHECKPOINT_FILE
  flat = safetensors.numpy.load_file(file)
  assert sorted(flat) == ['opt.0', 'params.Dense_0.kernel']
  np.testing.assert_array_equal(flat['params.Dense_0.kernel'], np.ones((2, 3)))


def test_keep_prunes_oldest(tmp_path):
  for step in range(4):
    checkpoints.save_checkpoint(
      tmp_path, {'s': np.array(step)}, step, keep=2, backend='safetensors'
    )
  assert sorted(os.listdir(tmp_path)) == ['checkpoint_2', 'checkpoint_3']
  assert checkpoints.latest_checkpoint(tmp_path).endswith('checkpoint_3')


def test_outdated_step_is_refused(tmp_path):
  checkpoints.save_checkpoint(
    tmp_path, {'s': np.array(2)}, 2, backend='safetensors'
  )
  with pytest.raises(errors.InvalidCheckpointError, match='outdated'):
    checkpoints.save_checkpoint(
      tmp_path, {'s': np.array(1)}, 1, backend='safetensors'
    )
  assert os.listdir(tmp_path) == ['checkpoint_2']


@pytest.mark.parametrize('error', [OSError('disk full'), KeyboardInterrupt()])
def test_failed_save_keeps_the_last_good_checkpoint(
  tmp_path, monkeypatch, error
):
  checkpoints.save_checkpoint(
    tmp_path, {'v': np.array(1)}, 1, backend='safetensors'
  )

  def failing_save_file(tensors, filename, metadata=None):
    with open(filename, 'wb') as f:
      f.write(b'\x10\x00\x00\x00\x00\x00\x00\x00{"half written')
    raise error

  monkeypatch.setattr(safetensors.numpy, 'save_file', failing_save_file)
  for step, overwrite in ((2, False), (1, True)):
    with pytest.raises(type(error)):
      checkpoints.save_checkpoint(
        tmp_path,
        {'v': np.array(5)},
        step,
        overwrite=overwrite,
        backend='safetensors',
      )
    assert os.listdir(tmp_path) == ['checkpoint_1']
  monkeypatch.undo()
  restored = checkpoints.restore_checkpoint(
    tmp_path, {'v': np.array(0)}, backend='safetensors'
  )
  assert int(restored['v']) == 1


def test_interrupted_process_leaves_earlier_checkpoints(tmp_path):
  # A process killed in the middle of writing the file.
  safetensors_backend.save(tmp_path, 1, {'v': np.array(1)})
  code = (
    'import os, sys, numpy as np, safetensors.numpy\n'
    'from flax.training import checkpoints\n'
    'def die(tensors, filename, metadata=None):\n'
    "  open(filename, 'wb').write(b'partial')\n"
    '  os._exit(3)\n'
    'safetensors.numpy.save_file = die\n'
    "checkpoints.save_checkpoint(sys.argv[1], {'v': np.array(2)}, 2,\n"
    "                            backend='safetensors')\n"
  )
  result = subprocess.run(
    [sys.executable, '-c', code, str(tmp_path)], capture_output=True
  )
  assert result.returncode == 3
  assert safetensors_backend.steps(tmp_path) == [1]
  assert checkpoints.available_steps(tmp_path) == [1]
  restored = safetensors_backend.restore(tmp_path, target={'v': np.array(0)})
  assert int(restored['v']) == 1
  # The next save proceeds past the leftover temporary directory.
  safetensors_backend.save(tmp_path, 2, {'v': np.array(2)})
  assert safetensors_backend.steps(tmp_path) == [1, 2]


def test_concurrent_saves_keep_every_step_whole(tmp_path):
  trees = {s: {'w': np.full((64, 64), s, np.float32)} for s in range(8)}
  barrier = threading.Barrier(len(trees))
  failures = []

  def save(step):
    barrier.wait()
    try:
      safetensors_backend.save(tmp_path, step, trees[step])
    except Exception as e:  # noqa: BLE001
      failures.append(e)

  threads = [threading.Thread(target=save, args=(s,)) for s in trees]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not failures
  assert safetensors_backend.steps(tmp_path) == list(range(8))
  assert sorted(os.listdir(tmp_path)) == [f'checkpoint_{s}' for s in range(8)]
  for step, tree in trees.items():
    restored = safetensors_backend.restore(tmp_path, step, tree)
    np.testing.assert_array_equal(restored['w'], tree['w'])


def test_concurrent_saves_of_one_step_one_wins(tmp_path):
  barrier = threading.Barrier(4)
  outcomes = []

  def save(value):
    barrier.wait()
    try:
      safetensors_backend.save(tmp_path, 7, {'v': np.full(1000, value)})
      outcomes.append(value)
    except errors.InvalidCheckpointError:
      outcomes.append(None)

  threads = [threading.Thread(target=save, args=(v,)) for v in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  winners = [v for v in outcomes if v is not None]
  assert len(winners) == 1
  assert os.listdir(tmp_path) == ['checkpoint_7']
  restored = safetensors_backend.restore(tmp_path, 7)
  np.testing.assert_array_equal(restored['v'], np.full(1000, winners[0]))


def _damage(path, how):
  data = path.read_bytes()
  if how == 'truncated':
    path.write_bytes(data[: len(data) - 5])
  elif how == 'empty':
    path.write_bytes(b'')
  elif how == 'garbage':
    path.write_bytes(b'not a safetensors file at all')
  elif how == 'tree':
    tensors = safetensors.numpy.load_file(path)
    safetensors.numpy.save_file(
      tensors, path, metadata={'flax.tree': '{"dict": [["v", {"tens'}
    )


@pytest.mark.parametrize('how', ['truncated', 'empty', 'garbage', 'tree'])
def test_corrupt_file_raises_a_clear_error(tmp_path, how):
  checkpoints.save_checkpoint(
    tmp_path, {'v': np.arange(10.0)}, 1, backend='safetensors'
  )
  file = tmp_path / 'checkpoint_1' / CHECKPOINT_FILE
  _damage(file, how)
  with pytest.raises(CheckpointCorruptedError, match='truncated or corrupted'):
    checkpoints.restore_checkpoint(tmp_path, None, backend='safetensors')
  with pytest.raises(CheckpointCorruptedError, match=str(file)):
    safetensors_backend.restore(tmp_path, target={'v': np.zeros(10)})


def test_exact_dtypes_and_scalars(tmp_path):
  tree = {
    'bf16': jnp.asarray([1.0, 2**-9, -3.5e3], jnp.bfloat16),
    'f16': np.asarray([65504.0, 6e-8, -0.1], np.float16),
    'f8': np.asarray([1.0, 0.5, -2.0], jnp.float8_e4m3fn),
    'int4': np.asarray([-8, 7, 1], jnp.int4),
    'c128': np.asarray([1 + 2j], np.complex128),
    'np_scalar': np.float32(1.5),
    'py': {'int': 2**70, 'float': float('nan'), 'none': None, 'b': b'\x00'},
    3: 'int key',
  }
  safetensors_backend.save(tmp_path, 0, tree)
  raw = safetensors_backend.restore(tmp_path)
  assert list(raw) == [
    'bf16',
    'f16',
    'f8',
    'int4',
    'c128',
    'np_scalar',
    'py',
    '3',
  ]
  for name in ('bf16', 'f16', 'f8', 'int4', 'c128'):
    got, want = np.asarray(raw[name]), np.asarray(tree[name])
    assert got.dtype == want.dtype, name
    assert got.tobytes() == want.tobytes(), name
  assert type(raw['np_scalar']) is np.float32 and raw['np_scalar'] == 1.5
  assert raw['py']['int'] == 2**70 and np.isnan(raw['py']['float'])
  assert raw['py']['none'] is None and raw['py']['b'] == b'\x00'
  assert raw['3'] == 'int key'


def test_unstorable_leaf_is_named(tmp_path):
  with pytest.raises(TypeError, match="'opt.fn' of type object"):
    safetensors_backend.save(tmp_path, 0, {'opt': {'fn': object()}})
  assert os.listdir(tmp_path) == []


def test_foreign_file_restores_with_names_nested(tmp_path):
  weights = {
    'fc.weight': np.ones((2, 3), np.float32),
    'fc.bias': np.arange(2, dtype=np.float32),
    'scale': np.array(2.0, np.float16),
  }
  safetensors.numpy.save_file(weights, tmp_path / 'checkpoint_4')
  assert safetensors_backend.steps(tmp_path) == [4]
  raw = checkpoints.restore_checkpoint(tmp_path, None, backend='safetensors')
  assert sorted(raw) == ['fc', 'scale'] and sorted(raw['fc']) == [
    'bias',
    'weight',
  ]
  np.testing.assert_array_equal(raw['fc']['bias'], weights['fc.bias'])
  target = {'fc': {'weight': np.zeros((2, 3)), 'bias': np.zeros(2)}, 'scale': 0}
  restored = checkpoints.restore_checkpoint(
    tmp_path, target, backend='safetensors'
  )
  np.testing.assert_array_equal(restored['fc']['weight'], np.ones((2, 3)))
  # A name that is also a prefix of another keeps every name flat.
  safetensors.numpy.save_file(
    {'a': np.zeros(1), 'a.b': np.ones(1)}, tmp_path / 'checkpoint_5'
  )
  assert sorted(safetensors_backend.restore(tmp_path, 5)) == ['a', 'a.b']


def test_metadata_records_the_format(tmp_path):
  checkpoints.save_checkpoint(tmp_path, {'a': 1}, 5, backend='safetensors')
  with safetensors.safe_open(
    tmp_path / 'checkpoint_5' / CHECKPOINT_FILE, 'np'
  ) as f:
    metadata = f.metadata()
  assert metadata['format'] == 'flax-safetensors/1'
  assert json.loads(metadata['flax.tree']) == {'dict': [['a', {'int': '1'}]]}


def test_typed_prng_keys(tmp_path):
  import jax

  keys = {'one': jax.random.key(3), 'many': jax.random.split(jax.random.key(0))}
  safetensors_backend.save(tmp_path, 0, keys)
  raw = safetensors_backend.restore(tmp_path)
  for name, key in keys.items():
    assert raw[name].dtype == key.dtype, name
    np.testing.assert_array_equal(
      jax.random.key_data(raw[name]), jax.random.key_data(key)
    )
  sharding = jax.sharding.SingleDeviceSharding(jax.devices()[1])
  target = jax.tree.map(
    lambda k: jax.ShapeDtypeStruct(k.shape, k.dtype, sharding=sharding), keys
  )
  restored = safetensors_backend.restore(tmp_path, target=target)
  assert restored['many'].sharding == sharding
  np.testing.assert_array_equal(
    jax.random.key_data(restored['many']), jax.random.key_data(keys['many'])
  )
