"""Pooling and attention functions."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

x = jnp.arange(32.0).reshape(1, 4, 4, 2)
report.array('max-pool', nn.max_pool(x, (2, 2), strides=(2, 2)))
report.array('avg-pool', nn.avg_pool(x, (3, 3), padding='SAME'))
report.array(
  'min-pool', nn.pool(x, jnp.inf, jax.lax.min, (2, 2), (1, 1), 'VALID')
)
report.array(
  'avg-pool-no-pad',
  nn.avg_pool(x, (3, 3), padding='SAME', count_include_pad=False),
)
k = jax.random.key(0)
q = jax.random.normal(k, (1, 3, 2, 4))
kk = jax.random.normal(jax.random.key(1), (1, 5, 2, 4))
v = jax.random.normal(jax.random.key(2), (1, 5, 2, 4))
report.array('dpa', nn.dot_product_attention(q, kk, v))
report.array('dpa-weights', nn.dot_product_attention_weights(q, kk))
mask = nn.make_causal_mask(jnp.ones((1, 3)))
report.array('causal-mask', mask)
report.array(
  'attention-mask',
  nn.make_attention_mask(jnp.ones((1, 3)), jnp.array([[1, 1, 0, 0, 1]])),
)
report.array('nnx-dpa', nnx.dot_product_attention(q, kk, v))
report.array('combine', nn.combine_masks(mask, mask))
