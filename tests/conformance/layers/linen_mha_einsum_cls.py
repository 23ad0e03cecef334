"""nn.MultiHeadDotProductAttention: einsum classes and the keywords handed
to custom attention functions."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Einsum:
  def __call__(self, eq, *args, **kwargs):
    print('einsum', eq, sorted(kwargs))
    return jnp.einsum(eq, *args)


def named(q, k, v, mask=None, qk_attn_weights_einsum=None, **kwargs):
  print(
    'named', mask is None, type(qk_attn_weights_einsum).__name__, sorted(kwargs)
  )
  return nn.dot_product_attention(q, k, v, mask=mask)


def catch_all(q, k, v, **kwargs):
  print('catch-all', sorted(kwargs))
  return nn.dot_product_attention(q, k, v)


x = jnp.linspace(-1, 1, 24).reshape(1, 3, 8)
m = nn.MultiHeadDotProductAttention(
  2, qk_attn_weights_einsum_cls=Einsum, attn_weights_value_einsum_cls=Einsum
)
v = m.init(jax.random.key(0), x)
with report.printed('einsum-calls'):
  report.array('out', m.apply(v, x))
for label, fn in (('named', named), ('catch-all', catch_all)):
  mm = nn.MultiHeadDotProductAttention(2, attention_fn=fn)
  with report.printed(label):
    mm.apply(v, x)
    mm.apply(v, x, sow_weights=True, mutable=['intermediates'])
q = jnp.ones((1, 2, 2, 2))
with report.raises('einsum-and-precision'):
  nn.dot_product_attention(
    q, q, q, precision='highest', qk_attn_weights_einsum=Einsum()
  )
report.text('repr', repr(m))
