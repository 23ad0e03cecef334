"""split_rngs / fork_rngs in place (graph mode): backups and restore."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


def keys(stream):
  return jax.random.key_data(stream.key[...])


class Model(nnx.Module):
  def __init__(self, rngs):
    self.rngs = rngs
    self.w = nnx.Param(jnp.ones(2))


m = Model(nnx.Rngs(0, dropout=1))
backups = nnx.split_rngs(m, splits=4)
report.text('backups-type', type(backups).__name__)
report.value(
  'split-shapes',
  [list(m.rngs.default.key.shape), list(m.rngs.dropout.key.shape)],
)
report.array('split-dropout', keys(m.rngs.dropout))
report.value('n-backups', len(list(backups)))
report.array('backup-key', jax.random.key_data(list(backups)[0][1]))
report.array('backup-count', list(backups)[0][2])
nnx.restore_rngs(backups)
report.array('restored-key', keys(m.rngs.dropout))
report.array('restored-count', m.rngs.dropout.count[...])

with nnx.split_rngs(m, splits=2, only='dropout'):
  report.value(
    'ctx-shapes',
    [list(m.rngs.default.key.shape), list(m.rngs.dropout.key.shape)],
  )
report.value('after-ctx', list(m.rngs.dropout.key.shape))

bk = nnx.fork_rngs(m)
report.array('forked-dropout', keys(m.rngs.dropout))
nnx.restore_rngs(bk)
bk = nnx.fork_rngs(m, split={'dropout': 3})
report.value(
  'fork-mapping-shapes',
  [list(m.rngs.default.key.shape), list(m.rngs.dropout.key.shape)],
)
report.array('fork-mapping-default-count', m.rngs.default.count[...])
nnx.restore_rngs(bk)


@nnx.split_rngs(splits=5)
def inside(model):
  return model.rngs.default.key.shape


report.value('decorated', list(inside(m)))
report.value('decorated-after', list(m.rngs.default.key.shape))
