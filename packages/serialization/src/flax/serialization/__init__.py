"""flax.serialization."""
