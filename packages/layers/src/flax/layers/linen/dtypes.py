"""``flax.linen.dtypes``: Flax's dtype rules for layers."""

from flax.layers.dtypes import canonicalize_dtype as canonicalize_dtype
from flax.layers.dtypes import promote_dtype as promote_dtype

__all__ = ['canonicalize_dtype', 'promote_dtype']
