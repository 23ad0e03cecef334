"""Metrics logging (``flax.metrics``).

:mod:`flax.metrics.tensorboard` writes TensorBoard summaries; it needs
TensorFlow (``pip install tensorflow``), imported when that module is.
"""
