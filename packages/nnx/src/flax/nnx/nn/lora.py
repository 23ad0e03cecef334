"""Alias of ``flax.layers.nnx.lora`` (provided by flax-layers)."""

from flax.plugins import require as _require

_m = _require('flax.layers.nnx.lora', 'flax-layers')
globals().update({k: v for k, v in vars(_m).items() if not k.startswith('__')})
if hasattr(_m, '__all__'):
  __all__ = list(_m.__all__)
del _m
