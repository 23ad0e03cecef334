"""flax.layers."""
