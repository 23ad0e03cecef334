"""nnx.with_rngs in tree mode: split / fork / broadcast, feeding nnx.vmap."""

import jax
import report
from flax import nnx


def show(r):
  return {
    k: [list(v.key.shape), v.count[...].tolist()] for k, v in sorted(r.items())
  }


r = nnx.Rngs(params=0, dropout=1)
o = nnx.with_rngs(r, split={'params': 3}, graph=False)
report.value('split-new', show(o))
report.array('split-params', jax.random.key_data(o.params.key[...]))
report.value('split-old', show(r))

r = nnx.Rngs(params=0, dropout=1, noise=2)
o = nnx.with_rngs(
  r, split={'params': 2}, fork='dropout', broadcast={'noise': 3}, graph=False
)
report.value('mixed', show(o))
report.array('broadcast-key', jax.random.key_data(o.noise.key[...]))
report.array('fork-key', jax.random.key_data(o.dropout.key[...]))


class Block(nnx.Module):
  def __init__(self, rngs):
    self.lin = nnx.Linear(2, 2, rngs=rngs)


@nnx.vmap(graph=False)
def make(rngs):
  return Block(rngs)


b = make(nnx.with_rngs(nnx.Rngs(0), split=3, graph=False))
report.tree('vmapped', nnx.state(b))

r = nnx.Rngs(0)
o = nnx.with_rngs(r, split=2, only='nope', graph=False)
report.value('only-none', show(o))
