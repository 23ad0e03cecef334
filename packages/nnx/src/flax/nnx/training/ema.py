"""Alias of ``flax.training.nnx.ema`` (provided by flax-training).

Importing this path gives that very module object (it replaces itself in
``sys.modules``), so ``nnx.ema``-style names and this path agree.
"""

import sys as _sys

from flax.plugins import require as _require

_sys.modules[__name__] = _require('flax.training.nnx.ema', 'flax-training')
