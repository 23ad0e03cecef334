"""Older import paths kept for code written against earlier Flax releases.

``flax.experimental.nnx`` is the NNX API under its pre-1.0 path.
"""

from flax.experimental import nnx as nnx
