"""NNX Linear/Conv/Einsum/Embed/LinearGeneral calls with out_sharding=None
and their Linen twins on the same parameters."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

x = jnp.linspace(-1, 1, 2 * 5 * 4).reshape(2, 5, 4)
lin = nnx.Linear(4, 3, rngs=nnx.Rngs(0))
report.array('linear', lin(x, out_sharding=None))
p = {'params': {'kernel': lin.kernel[...], 'bias': lin.bias[...]}}
report.array('dense-twin', nn.Dense(3).apply(p, x) - lin(x), atol=1e-6)
conv = nnx.Conv(4, 2, (3,), padding='CIRCULAR', rngs=nnx.Rngs(1))
report.array('conv', conv(x, out_sharding=None))
p = {'params': {'kernel': conv.kernel[...], 'bias': conv.bias[...]}}
report.array(
  'conv-twin',
  nn.Conv(2, (3,), padding='CIRCULAR').apply(p, x) - conv(x),
  atol=1e-6,
)
es = nnx.Einsum('btd,dh->bth', (4, 3), (3,), rngs=nnx.Rngs(2))
report.array('einsum', es(x, out_sharding=None))
emb = nnx.Embed(5, 3, rngs=nnx.Rngs(3))
report.array('embed', emb(jnp.array([[0, 4], [2, 7]]), out_sharding=None))
lg = nnx.LinearGeneral((5, 4), 2, axis=(-2, -1), rngs=nnx.Rngs(4))
report.array('linear-general', lg(x, out_sharding=None))
