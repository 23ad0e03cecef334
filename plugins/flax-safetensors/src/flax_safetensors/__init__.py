"""A safetensors checkpoint backend for Flax, with PyTorch-style interop.

Select the backend like any other: ``backend='safetensors'`` in
``flax.training.checkpoints.save_checkpoint`` / ``restore_checkpoint``,
``flax.plugins.use_backend('checkpoint', 'safetensors')``, the
``flax_checkpoint_backend`` config flag or the ``FLAX_CHECKPOINT_BACKEND``
environment variable.

The interop helpers give a flat ``{'layer.weight': array}`` view of a Linen
params tree or an ``nnx.State`` and back, with PyTorch names and layouts by
default (``mapping='torch'``):

* ``flatten_weights(tree, mapping='torch')`` and
  ``unflatten_weights(flat, target, mapping='torch', shardings=None)``;
* ``save_file(tree, filename)`` and ``load_file(filename, target)``, which
  reads each array (or each device's slice of it) straight from the file;
* ``torch_name(path, shape)``, the built-in mapping.

Names are imported on first use, so importing this package is cheap.
"""

import importlib

__version__ = '0.1.0'

_EXPORTS = {
  'SafetensorsBackend': 'flax_safetensors.backend',
  'safetensors_backend': 'flax_safetensors.backend',
  'CHECKPOINT_FILE': 'flax_safetensors.backend',
  'flatten_weights': 'flax_safetensors.interop',
  'unflatten_weights': 'flax_safetensors.interop',
  'save_file': 'flax_safetensors.interop',
  'load_file': 'flax_safetensors.interop',
  'torch_name': 'flax_safetensors.mapping',
  'identity_name': 'flax_safetensors.mapping',
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
  module = _EXPORTS.get(name)
  if module is None:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  value = getattr(importlib.import_module(module), name)
  globals()[name] = value
  return value


def __dir__():
  return sorted({*globals(), *_EXPORTS})
