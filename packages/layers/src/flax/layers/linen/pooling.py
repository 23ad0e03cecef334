"""``flax.linen.pooling``: pooling functions."""

from flax.layers.pooling import avg_pool as avg_pool
from flax.layers.pooling import max_pool as max_pool
from flax.layers.pooling import min_pool as min_pool
from flax.layers.pooling import pool as pool

__all__ = ['avg_pool', 'max_pool', 'min_pool', 'pool']
