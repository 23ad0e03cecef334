"""Initializers of the NNX layers (``flax.nnx.initializers``).

The same functions as ``jax.nn.initializers`` plus Flax's ``zeros_init`` and
``ones_init`` builders; every initializer is called as
``init(key, shape, dtype)``.

>>> import jax, jax.numpy as jnp
>>> from flax import nnx
>>> nnx.initializers.ones_init()(jax.random.key(0), (2,), jnp.float32)
Array([1., 1.], dtype=float32)
"""

from flax.layers.initializers import *  # noqa: F403
from flax.layers.initializers import __all__  # noqa: F401

# The type of an initializer argument: a JAX initializer or any callable.
from flax.typing import Initializer as Initializer  # noqa: E402
