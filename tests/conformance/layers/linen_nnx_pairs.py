"""Linen and NNX layers give the same outputs for the same parameters."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

x = jnp.linspace(-1, 1, 12).reshape(3, 4)
lin = nnx.Linear(4, 2, rngs=nnx.Rngs(0))
params = {'params': {'kernel': lin.kernel[...], 'bias': lin.bias[...]}}
report.array('dense', nn.Dense(2).apply(params, x) - lin(x), atol=1e-6)
ln = nnx.LayerNorm(4, rngs=nnx.Rngs(0))
report.array(
  'layernorm',
  nn.LayerNorm().apply(
    {'params': {'scale': ln.scale[...], 'bias': ln.bias[...]}}, x
  )
  - ln(x),
)
emb_l = nn.Embed(6, 3)
ev = emb_l.init(jax.random.key(0), jnp.array([1]))
emb_n = nnx.Embed(6, 3, rngs=nnx.Rngs(0))
report.array(
  'embed-same-init', ev['params']['embedding'] - emb_n.embedding[...]
)
report.array('attend', emb_n.attend(jnp.ones((2, 3))))
