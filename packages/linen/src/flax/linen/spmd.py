"""``flax.linen.spmd``: alias of ``flax.spmd`` (the flax-spmd distribution).

Keeps Flax's import path working and names the distribution to install
when it is missing.
"""

from flax.plugins import require as _require

_provider = _require('flax.spmd', 'flax-spmd')
globals().update(
  {k: v for k, v in vars(_provider).items() if not k.startswith('__')}
)
__all__ = getattr(
  _provider, '__all__', [k for k in vars(_provider) if not k.startswith('_')]
)
