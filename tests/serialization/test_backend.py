"""The checkpoint-backend protocol and the msgpack backend."""

import os

import numpy as np
import pytest

from flax import errors, plugins, serialization
from flax.serialization.testing import CheckpointBackendContract


class TestMsgpackBackendContract(CheckpointBackendContract):
  def make_backend(self):
    return serialization.MsgpackBackend()


def test_msgpack_backend_is_registered_by_plugin():
  assert 'msgpack' in plugins.backend_names('checkpoint')
  assert plugins.select_backend('checkpoint', 'msgpack') is (
    serialization.msgpack_backend
  )
  with plugins.use_backend('checkpoint', 'msgpack'):
    assert plugins.select_backend('checkpoint').name == 'msgpack'


def test_files_are_flax_bytes(tmp_path):
  tree = {'w': np.arange(3, dtype=np.int32), 'n': 'x'}
  path = serialization.msgpack_backend.save(tmp_path, 2, tree)
  assert os.path.basename(path) == 'checkpoint_2'
  with open(path, 'rb') as f:
    assert f.read() == serialization.to_bytes(tree)
  assert os.listdir(tmp_path) == ['checkpoint_2']


def test_corrupted_and_truncated_files(tmp_path):
  backend = serialization.msgpack_backend
  path = backend.save(tmp_path, 1, {'w': np.arange(100.0)})
  with open(path, 'rb') as f:
    data = f.read()
  for bad in (data[: len(data) // 2], b'', b'\xff' * 10, data + b'junk'):
    with open(path, 'wb') as f:
      f.write(bad)
    with pytest.raises(serialization.CheckpointCorruptedError) as info:
      backend.restore(tmp_path)
    assert 'checkpoint_1' in str(info.value)
    assert isinstance(info.value, ValueError)


def test_atomic_write_failure_keeps_the_old_file(tmp_path):
  path = tmp_path / 'f'
  serialization.atomic_write(path, b'old')

  def pieces():
    yield b'new'
    raise RuntimeError('disk on fire')

  with pytest.raises(RuntimeError):
    serialization.atomic_write(path, pieces())
  assert path.read_bytes() == b'old'
  assert os.listdir(tmp_path) == ['f']


def test_atomic_write_without_overwrite(tmp_path):
  path = tmp_path / 'f'
  serialization.atomic_write(path, [b'a', b'b'], overwrite=False)
  with pytest.raises(FileExistsError):
    serialization.atomic_write(path, b'c', overwrite=False)
  assert path.read_bytes() == b'ab'
  assert os.listdir(tmp_path) == ['f']


def test_save_reports_existing_step_with_flax_error(tmp_path):
  serialization.msgpack_backend.save(tmp_path, 0, {'a': 1})
  with pytest.raises(errors.InvalidCheckpointError, match='checkpoint_0'):
    serialization.msgpack_backend.save(tmp_path, 0, {'a': 2})


def test_abstract_target_checks_shape(tmp_path):
  import jax

  serialization.msgpack_backend.save(tmp_path, 0, {'w': np.zeros(3)})
  with pytest.raises(ValueError, match='shape'):
    serialization.msgpack_backend.restore(
      tmp_path, target={'w': jax.ShapeDtypeStruct((4,), np.float32)}
    )
