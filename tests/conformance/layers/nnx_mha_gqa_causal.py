"""nnx.MultiHeadAttention: num_kv_heads, is_causal, sharding keywords,
attributes, decode cache."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

m = nnx.MultiHeadAttention(4, 8, num_kv_heads=2, decode=False, rngs=nnx.Rngs(0))
report.tree('params', nnx.state(m, nnx.Param))
report.value('attrs', [k for k in vars(m) if not k.startswith('_')])
x = jax.random.normal(jax.random.key(1), (2, 3, 8))
report.array('out', m(x))
report.array('causal', m(x, is_causal=True))
report.array('sharding-none', m(x, qkv_sharding=None, out_sharding=None))
mask = nnx.make_causal_mask(jnp.ones((2, 3)))
report.array('mask-equals-causal', m(x, mask=mask) - m(x, is_causal=True))
with report.raises('bad-kv-heads'):
  nnx.MultiHeadAttention(4, 8, num_kv_heads=3, rngs=nnx.Rngs(0))
d = nnx.MultiHeadAttention(4, 8, num_kv_heads=2, decode=True, rngs=nnx.Rngs(0))
d.init_cache((2, 3, 8))
report.tree('cache', nnx.state(d, nnx.Cache))
for t in range(3):
  report.array(f'step-{t}', d(x[:, t : t + 1]))
