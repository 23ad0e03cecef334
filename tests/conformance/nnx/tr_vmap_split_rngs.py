"""split_rngs / fork_rngs under nnx.vmap: dropout masks differ per member."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Drop(nnx.Module):
  def __init__(self, rngs):
    self.drop = nnx.Dropout(0.5, rngs=rngs)

  def __call__(self, x):
    return self.drop(x)


x = jnp.ones((3, 6))

m = Drop(nnx.Rngs(dropout=0))


@nnx.split_rngs(splits=3)
@nnx.vmap(in_axes=(0, 0))
def f(m, x):
  return m(x)


report.array('split-masks', f(m, x))
report.array('split-count', m.drop.rngs.count[...])
report.value('split-key-shape', list(m.drop.rngs.key.shape))


m = Drop(nnx.Rngs(dropout=0))
axes = nnx.StateAxes({nnx.RngState: 0, ...: None})


@nnx.split_rngs(splits=3)
@nnx.vmap(in_axes=(axes, 0))
def g(m, x):
  return m(x)


report.array('stateaxes-masks', g(m, x))
report.array('stateaxes-masks-2', g(m, x))

rngs = nnx.Rngs(params=0, dropout=1)


@nnx.vmap(in_axes=(0, None))
def make(r, n):
  return r.params.normal((n,))


out = make(nnx.split_rngs(rngs, splits=4, graph=False), 2)
report.array('tree-split-normal', out)

rngs = nnx.Rngs(params=0, dropout=1)
with nnx.split_rngs(rngs, splits=2, only='dropout'):
  report.value(
    'ctx-shapes', [list(rngs.params.key.shape), list(rngs.dropout.key.shape)]
  )
  report.array('ctx-dropout', jax.random.key_data(rngs.dropout.key[...]))
report.value(
  'after-shapes', [list(rngs.params.key.shape), list(rngs.dropout.key.shape)]
)
report.array('after-key', jax.random.key_data(rngs.dropout.key[...]))

rngs = nnx.Rngs(params=0, dropout=1)
backups = nnx.fork_rngs(rngs, split={'params': 3})
report.value(
  'fork-shapes', [list(rngs.params.key.shape), list(rngs.dropout.key.shape)]
)
report.array('fork-params', jax.random.key_data(rngs.params.key[...]))
nnx.restore_rngs(backups)
report.value(
  'restored-shapes', [list(rngs.params.key.shape), list(rngs.dropout.key.shape)]
)
report.array('restored-count', rngs.params.count[...])
