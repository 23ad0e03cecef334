"""NNX training helpers: ``Optimizer``, ``metrics`` and ``EMA``.

They are exported into ``flax.nnx`` (``nnx.Optimizer``, ``nnx.metrics``,
``nnx.EMA``) and reachable as ``flax.nnx.training.{optimizer,metrics,ema}``.
They need ``flax.nnx``: install ``flax-training[nnx]``. This package imports
nothing itself, so ``flax.training`` works without flax-nnx.
"""
