"""Alias of ``flax.layers.nnx.linear`` (provided by flax-layers)."""

from flax.plugins import require as _require

_m = _require('flax.layers.nnx.linear', 'flax-layers')
globals().update({k: v for k, v in vars(_m).items() if not k.startswith('__')})
if hasattr(_m, '__all__'):
  __all__ = list(_m.__all__)
del _m

# Flax keeps the convolutions in this module.
_conv = _require('flax.layers.nnx.conv', 'flax-layers')
Conv = _conv.Conv
ConvTranspose = _conv.ConvTranspose
canonicalize_padding = _conv.canonicalize_padding
del _conv
