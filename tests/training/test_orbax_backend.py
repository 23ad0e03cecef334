"""The Orbax backend passes the checkpoint-backend contract."""

from flax import plugins
from flax.serialization.testing import CheckpointBackendContract
from flax.training import _orbax


class TestOrbaxBackendContract(CheckpointBackendContract):
  def make_backend(self):
    return _orbax.OrbaxBackend()


def test_orbax_backend_is_registered():
  assert 'orbax' in plugins.backend_names('checkpoint')
  assert plugins.select_backend('checkpoint', 'orbax').name == 'orbax'
