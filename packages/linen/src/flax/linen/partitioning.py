"""``flax.linen.partitioning``: alias of ``flax.spmd.linen`` (flax-spmd).

Logical partitioning helpers for Linen (``param_with_axes``,
``scan_with_axes``, ``axis_rules``, ...). They live in the flax-spmd
distribution; this module keeps Flax's import path working and names the
distribution to install when it is missing.
"""

from flax.plugins import require as _require

_provider = _require('flax.spmd.linen', 'flax-spmd')
globals().update(
  {k: v for k, v in vars(_provider).items() if not k.startswith('__')}
)
__all__ = getattr(
  _provider, '__all__', [k for k in vars(_provider) if not k.startswith('_')]
)
