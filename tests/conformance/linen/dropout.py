"""Linen Dropout: mask for a fixed dropout key, deterministic mode."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.Dropout(rate=0.5)
x = jnp.ones((4, 8))
report.array('eval', model.apply({}, x, deterministic=True))
y = model.apply({}, x, deterministic=False, rngs={'dropout': jax.random.key(3)})
report.array('train', y, exact=True)
with report.raises('missing rng'):
  model.apply({}, x, deterministic=False)
