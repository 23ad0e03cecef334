"""NNX training helpers (exported as ``nnx.Optimizer``, ``nnx.metrics``)."""
