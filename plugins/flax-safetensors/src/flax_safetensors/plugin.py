"""The plugin module of flax-safetensors: registers the checkpoint backend.

It holds import strings only: the registry imports it when a lookup needs
third-party records (for instance ``backend='safetensors'``), and the
backend module, with safetensors itself, is imported only when the backend
is selected.
"""

from flax import plugins


@plugins.hookimpl
def flax_checkpoint_backends():
  # Priority 0: below msgpack, so that installing the plugin never changes
  # what an unconfigured save writes.
  return [
    plugins.Backend(
      'safetensors', 'flax_safetensors.backend:safetensors_backend', 0
    )
  ]
