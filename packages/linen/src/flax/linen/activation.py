"""``flax.linen.activation``: alias of ``flax.layers.linen.activation``.

The layer zoo lives in the flax-layers distribution; this module keeps
Flax's import path working and names the distribution to install when it
is missing.
"""

from flax.plugins import require as _require

_provider = _require('flax.layers.linen.activation', 'flax-layers')
globals().update(
  {k: v for k, v in vars(_provider).items() if not k.startswith('__')}
)
__all__ = getattr(
  _provider, '__all__', [k for k in vars(_provider) if not k.startswith('_')]
)
