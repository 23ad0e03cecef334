"""``flax.linen.initializers``: ``jax.nn.initializers`` plus Flax builders."""

from flax.layers.initializers import *  # noqa: F403
from flax.layers.initializers import __all__ as __all__
