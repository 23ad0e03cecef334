"""nn.ConvTranspose / nnx.ConvTranspose: preferred_element_type."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

x = jnp.linspace(-1, 1, 12).reshape(1, 6, 2).astype(jnp.bfloat16)
layer = nn.ConvTranspose(
  3, (3,), strides=(2,), dtype=jnp.bfloat16, preferred_element_type=jnp.float32
)
v = layer.init(jax.random.key(0), x)
report.text('repr', repr(layer))
report.array('linen', layer.apply(v, x), rtol=1e-2, atol=1e-2)
m = nnx.ConvTranspose(
  2,
  3,
  (3,),
  strides=2,
  dtype=jnp.bfloat16,
  preferred_element_type=jnp.float32,
  rngs=nnx.Rngs(0),
)
report.array('nnx', m(x), rtol=1e-2, atol=1e-2)
c = nnx.Conv(2, 3, (3,), rngs=nnx.Rngs(0))
report.array('nnx-conv', c(x.astype(jnp.float32), out_sharding=None))
