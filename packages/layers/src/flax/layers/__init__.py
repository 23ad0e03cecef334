"""Framework-neutral layer math shared by the Linen and NNX layer classes.

Importing ``flax.layers`` is light: it imports neither Linen nor NNX. The
submodules hold plain functions on arrays:

- :mod:`flax.layers.initializers`: ``jax.nn.initializers`` plus
  ``zeros_init`` / ``ones_init`` and the default kernel initializer.
- :mod:`flax.layers.activations`: every activation Flax exports (``relu``,
  ``gelu``, ``softmax``, ``one_hot``, ...).
- :mod:`flax.layers.dtypes`: ``canonicalize_dtype`` and ``promote_dtype``.
- :mod:`flax.layers.linear`: dense / general dot products, convolution
  padding and batching, transposed and local convolutions, einsum bias.
- :mod:`flax.layers.normalization`: statistics and normalization.
- :mod:`flax.layers.attention`: dot-product attention and masks.
- :mod:`flax.layers.pooling`: ``pool``, ``avg_pool``, ``max_pool``,
  ``min_pool``.
- :mod:`flax.layers.recurrent`: sequence flipping and carry selection.
- :mod:`flax.layers.stochastic`: dropout masks.

The layer classes live in :mod:`flax.layers.linen` (exported into
``flax.linen``) and :mod:`flax.layers.nnx` (exported into ``flax.nnx``).

>>> import flax.layers.activations as act
>>> float(act.relu(-1.0))
0.0
"""

_SUBMODULES = (
  'activations',
  'attention',
  'dtypes',
  'initializers',
  'linear',
  'normalization',
  'pooling',
  'recurrent',
  'stochastic',
)


def __getattr__(name):
  if name in _SUBMODULES:
    import importlib

    return importlib.import_module(f'{__name__}.{name}')
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
  return sorted(set(globals()) | set(_SUBMODULES))
