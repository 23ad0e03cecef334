"""Pooling functions of NNX (``flax.nnx.avg_pool`` ...).

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> nnx.max_pool(jnp.arange(4.0).reshape(1, 4, 1), (2,), strides=(2,))[0, :, 0]
Array([1., 3.], dtype=float32)
"""

from flax.layers.pooling import avg_pool as avg_pool
from flax.layers.pooling import max_pool as max_pool
from flax.layers.pooling import min_pool as min_pool
from flax.layers.pooling import pool as pool

__all__ = ['avg_pool', 'max_pool', 'min_pool', 'pool']
