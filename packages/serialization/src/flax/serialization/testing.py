"""A pytest suite that every checkpoint backend should pass.

Subclass ``CheckpointBackendContract`` in a test module and define
``make_backend``; pytest then runs every ``test_*`` method against your
backend::

  from flax.serialization.testing import CheckpointBackendContract

  class TestMyBackend(CheckpointBackendContract):
    def make_backend(self):
      return MyBackend()

The tests use pytest's ``tmp_path`` and ``monkeypatch`` fixtures, write
small trees only, and need nothing but flax-core, NumPy and JAX.
"""

import collections

import numpy as np
import pytest

from flax import errors

_Pair = collections.namedtuple('_Pair', ['first', 'second'])


def sample_tree():
  """A tree with most kinds of leaves a checkpoint holds."""
  return {
    'params': {
      'kernel': np.arange(12, dtype=np.float32).reshape(3, 4),
      'bias': np.array([1.5, -2.0], dtype=np.float32),
    },
    'step': 7,
    'count': np.array(3, dtype=np.int32),
    'name': 'model',
    'flags': [np.array([True, False]), np.arange(3, dtype=np.int64)],
  }


class CheckpointBackendContract:
  """Tests of the ``flax.serialization.CheckpointBackend`` protocol.

  Subclasses define ``make_backend(self)`` returning a fresh backend.
  """

  @pytest.fixture
  def backend(self):
    return self.make_backend()

  def test_has_a_name(self, backend):
    assert isinstance(backend.name, str) and backend.name

  def test_save_returns_path_and_restores_into_target(self, backend, tmp_path):
    tree = sample_tree()
    path = backend.save(tmp_path, 1, tree)
    assert str(path).endswith('checkpoint_1')
    target = {
      'params': {'kernel': np.zeros((3, 4), np.float32), 'bias': np.zeros(2)},
      'step': 0,
      'count': np.array(0, np.int32),
      'name': '',
      'flags': [np.zeros(2, bool), np.zeros(3, np.int64)],
    }
    restored = backend.restore(tmp_path, target=target)
    np.testing.assert_array_equal(
      restored['params']['kernel'], tree['params']['kernel']
    )
    np.testing.assert_array_equal(restored['flags'][1], tree['flags'][1])
    assert isinstance(restored['flags'], list)
    assert int(restored['step']) == 7 and restored['name'] == 'model'

  def test_raw_restore_gives_state_dict(self, backend, tmp_path):
    backend.save(tmp_path, 0, {'a': [np.arange(2), np.ones(1)], 'b': 'x'})
    raw = backend.restore(tmp_path)
    assert set(raw) == {'a', 'b'} and raw['b'] == 'x'
    assert set(raw['a']) == {'0', '1'}
    np.testing.assert_array_equal(raw['a']['0'], np.arange(2))

  def test_namedtuple_target(self, backend, tmp_path):
    backend.save(tmp_path, 0, {'p': _Pair(np.arange(2), np.ones(3))})
    restored = backend.restore(
      tmp_path, target={'p': _Pair(np.zeros(2, np.int64), np.zeros(3))}
    )
    assert isinstance(restored['p'], _Pair)
    np.testing.assert_array_equal(restored['p'].first, [0, 1])

  def test_steps_sort_numerically(self, backend, tmp_path):
    for step in (2, 10, 1):
      backend.save(tmp_path, step, {'s': np.array(step)})
    assert backend.steps(tmp_path) == [1, 2, 10]
    assert backend.latest_step(tmp_path) == 10
    restored = backend.restore(tmp_path, target={'s': np.array(0)})
    assert int(restored['s']) == 10

  def test_float_and_negative_steps(self, backend, tmp_path):
    for step in (0.01, -1.0, 0.1, 0.001):
      backend.save(tmp_path, step, {'s': np.array(step)})
    assert backend.steps(tmp_path) == [-1.0, 0.001, 0.01, 0.1]
    assert backend.latest_step(tmp_path) == 0.1

  def test_restore_given_step(self, backend, tmp_path):
    for step in (1, 2):
      backend.save(tmp_path, step, {'s': np.array(step)})
    assert int(backend.restore(tmp_path, 1, {'s': np.array(0)})['s']) == 1

  def test_prefixes_are_separate(self, backend, tmp_path):
    backend.save(tmp_path, 1, {'s': np.array(1)}, prefix='a_')
    backend.save(tmp_path, 5, {'s': np.array(5)}, prefix='b_')
    assert backend.steps(tmp_path, prefix='a_') == [1]
    assert backend.steps(tmp_path, prefix='b_') == [5]

  def test_empty_and_missing_directories(self, backend, tmp_path):
    assert backend.steps(tmp_path) == []
    assert backend.latest_step(tmp_path) is None
    assert backend.steps(tmp_path / 'missing') == []
    with pytest.raises(FileNotFoundError):
      backend.restore(tmp_path)
    with pytest.raises(FileNotFoundError):
      backend.restore(tmp_path, step=3)

  def test_existing_step_is_not_overwritten(self, backend, tmp_path):
    backend.save(tmp_path, 3, {'v': np.array(1)})
    with pytest.raises(errors.InvalidCheckpointError):
      backend.save(tmp_path, 3, {'v': np.array(2)})
    assert int(backend.restore(tmp_path, 3, {'v': np.array(0)})['v']) == 1

  def test_overwrite_replaces(self, backend, tmp_path):
    backend.save(tmp_path, 3, {'v': np.array(1)})
    backend.save(tmp_path, 3, {'v': np.array(2)}, overwrite=True)
    assert int(backend.restore(tmp_path, 3, {'v': np.array(0)})['v']) == 2
    assert backend.steps(tmp_path) == [3]

  def test_delete(self, backend, tmp_path):
    for step in (1, 2):
      backend.save(tmp_path, step, {'v': np.array(step)})
    backend.delete(tmp_path, 2)
    assert backend.steps(tmp_path) == [1]

  def test_relative_paths(self, backend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    backend.save('rel/ckpts', 4, {'v': np.arange(3)})
    assert backend.steps('rel/ckpts') == [4]
    restored = backend.restore('rel/ckpts', target={'v': np.zeros(3, int)})
    np.testing.assert_array_equal(restored['v'], np.arange(3))

  def test_directory_that_is_a_file(self, backend, tmp_path):
    path = tmp_path / 'not_a_dir'
    path.write_bytes(b'x')
    with pytest.raises(OSError):
      backend.save(path, 0, {'v': np.array(1)})
    assert path.read_bytes() == b'x'

  def test_abstract_target_with_sharding(self, backend, tmp_path):
    import jax

    backend.save(tmp_path, 0, {'w': np.arange(6, dtype=np.float32)})
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    abstract = {'w': jax.ShapeDtypeStruct((6,), np.float32, sharding=sharding)}
    restored = backend.restore(tmp_path, target=abstract)
    assert isinstance(restored['w'], jax.Array)
    assert restored['w'].sharding == sharding
    np.testing.assert_array_equal(restored['w'], np.arange(6))

  def test_roundtrip_of_dtypes(self, backend, tmp_path):
    import jax.numpy as jnp

    tree = {
      name: np.arange(4).astype(dtype)
      for name, dtype in [
        ('f16', np.float16),
        ('f64', np.float64),
        ('i8', np.int8),
        ('u32', np.uint32),
        ('c64', np.complex64),
        ('bf16', jnp.bfloat16),
      ]
    }
    backend.save(tmp_path, 0, tree)
    restored = backend.restore(tmp_path, target=tree)
    for name, value in tree.items():
      assert np.asarray(restored[name]).dtype == value.dtype, name
      np.testing.assert_array_equal(np.asarray(restored[name]), value)
