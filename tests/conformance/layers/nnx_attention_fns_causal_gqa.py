"""nnx.dot_product_attention(_weights): is_causal and fewer key/value
heads (grouped-query attention)."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx.nn import attention

k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
q = jax.random.normal(k1, (2, 4, 6, 3))
k = jax.random.normal(k2, (2, 5, 2, 3))
v = jax.random.normal(k3, (2, 5, 2, 3))
report.array('gqa', nnx.dot_product_attention(q, k, v))
report.array('gqa-causal', nnx.dot_product_attention(q, k, v, is_causal=True))
report.array(
  'weights-causal',
  attention.dot_product_attention_weights(q, k, is_causal=True),
)
mask = jnp.tril(jnp.ones((4, 5), bool))[None, None]
report.array(
  'causal-and-mask',
  nnx.dot_product_attention(q, k, v, mask=mask, is_causal=True),
)
kk = jax.random.normal(k2, (2, 5, 4, 3))
report.array(
  'mha-causal', nnx.dot_product_attention(q[:, :, :4], kk, kk, is_causal=True)
)
with report.raises('heads-not-divisible'):
  nnx.dot_product_attention(q, jnp.ones((2, 5, 4, 3)), jnp.ones((2, 5, 4, 3)))
