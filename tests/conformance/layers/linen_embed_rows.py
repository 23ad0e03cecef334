"""nn.Embed / nnx.Embed: out-of-range ids and one-row tables."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx

ids = jnp.array([0, 3, -1, 2, -4, 1])
for rows in (1, 3):
  e = nn.Embed(rows, 2)
  v = e.init(jax.random.key(0), jnp.arange(1))
  report.array(f'linen-{rows}', e.apply(v, ids))
  m = nnx.Embed(rows, 2, rngs=nnx.Rngs(0))
  report.array(f'nnx-{rows}', m(ids))
  report.array(
    f'nnx-attend-{rows}', m.attend(jnp.ones((2, 2)), out_sharding=None)
  )
