"""Stacks of layers built by nnx.vmap / nnx.scan over a constructor."""

import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, rngs):
    self.linear = nnx.Linear(2, 2, rngs=rngs)
    self.bn = nnx.BatchNorm(2, rngs=rngs)
    self.dropout = nnx.Dropout(0.1, rngs=rngs)


@nnx.split_rngs(splits=3)
@nnx.vmap(in_axes=(0,), out_axes=0)
def create(rngs):
  return Block(rngs)


m = create(nnx.Rngs(0))
report.tree('vmap-state', nnx.state(m))


@nnx.split_rngs(splits=3)
@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
def create_scan(c, rngs):
  return c, Block(rngs)


c, m = create_scan(0, nnx.Rngs(1))
report.tree('scan-params', nnx.state(m, nnx.Param))


@nnx.split_rngs(splits=3)
@nnx.vmap(in_axes=(0,), out_axes=nnx.StateAxes({nnx.BatchStat: None, ...: 0}))
def create_c(rngs):
  return Block(rngs)


m = create_c(nnx.Rngs(2))
report.value(
  'shapes', [list(m.linear.kernel[...].shape), list(m.bn.mean[...].shape)]
)
