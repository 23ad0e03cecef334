"""The Orbax backend is registered (its contract runs in
test_checkpoint_backends.py)."""

from flax import plugins


def test_orbax_backend_is_registered():
  assert 'orbax' in plugins.backend_names('checkpoint')
  assert plugins.select_backend('checkpoint', 'orbax').name == 'orbax'
