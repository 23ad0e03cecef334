"""flax.spmd."""
