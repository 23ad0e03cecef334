"""nnx.reseed: stream values, counts, policies and dropout masks after reseed."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self, rngs):
    self.drop = nnx.Dropout(0.5, rngs=rngs)
    self.lin = nnx.Linear(2, 2, rngs=rngs)


m = M(nnx.Rngs(params=0, dropout=1))
x = jnp.ones((2, 8))
a = m.drop(x)
nnx.reseed(m, dropout=5)
b = m.drop(x)
report.array('mask-a', a)
report.array('mask-b', b)
ref = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=5))(x)
report.array('mask-ref', ref)
report.array('count', m.drop.rngs.count[...])
report.array('key', jax.random.key_data(m.drop.rngs.key[...]))

nnx.reseed(m, dropout=jax.random.key(9))
report.array('mask-key', m.drop(x))

r = nnx.Rngs(params=0, dropout=1)
nnx.reseed(r, params=3)
report.array('rngs-params', r.params.normal((3,)))
report.array('rngs-dropout', r.dropout.normal((3,)))

r = nnx.Rngs(params=0)
s = nnx.split_rngs(r, splits=4, graph=False)
with report.raises('split-reseed-scalars-only'):
  nnx.reseed(s, params=2)
r = nnx.Rngs(params=0)
s = nnx.split_rngs(r, splits=4, graph=False)
nnx.reseed(s, params=2, policy='match_shape')
report.array('match-shape', jax.random.key_data(s.params.key[...]))
report.value('match-shape-shape', list(s.params.key.shape))

r = nnx.Rngs(params=0)
with report.raises('unknown stream'):
  nnx.reseed(r, nope=1)
