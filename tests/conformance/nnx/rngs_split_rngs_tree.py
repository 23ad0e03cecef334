"""split_rngs / fork_rngs / with_rngs in tree mode return new objects."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


def show(r):
  return {
    k: [
      list(v.key.shape),
      jax.random.key_data(v.key[...]).ravel()[:2].tolist(),
      v.count[...].tolist(),
    ]
    for k, v in sorted(r.items())
  }


r = nnx.Rngs(0, params=1)
o = nnx.split_rngs(r, splits=2, graph=False)
report.value('split-new', show(o))
report.value('split-old', show(r))
r = nnx.Rngs(0, params=1)
o = nnx.split_rngs(r, splits=2, only='params', graph=False)
report.value('split-only-new', show(o))
report.value('split-only-old', show(r))
r = nnx.Rngs(0, params=1)
o = nnx.fork_rngs(r, graph=False)
report.value('fork-new', show(o))
o = nnx.fork_rngs(r, split={'params': 2}, graph=False)
report.value('fork-map-new', show(o))
report.value('fork-map-old', show(r))
r = nnx.Rngs(0, params=1)
o = nnx.split_rngs(r, splits=2, graph=True, graph_updates=False)
report.value('graph-no-updates', show(o))
report.value('graph-no-updates-old', show(r))


@nnx.split_rngs(splits=2, graph=False)
def f(r):
  return show(r)


r = nnx.Rngs(0, params=1)
report.value('decorated', f(r))
report.value('decorated-old', show(r))

r = nnx.Rngs(0, params=1, dropout=2)
o = nnx.with_rngs(
  r, split={'params': 2}, fork='dropout', broadcast={'default': 3}, graph=False
)
report.value('with-rngs', show(o))
report.value('with-rngs-old', show(r))
o = nnx.with_rngs(r, split=2, only='params', graph=False)
report.value('with-rngs-only', show(o))


class M(nnx.Module):
  def __init__(self, rngs):
    self.rngs = rngs
    self.w = nnx.Param(jnp.ones(2))


m = M(nnx.Rngs(0, dropout=1))
o = nnx.with_rngs(m, split=2, graph=False)
report.value('module-copy', [o is m, o.w is m.w])
report.value('module-rngs', show(o.rngs))
