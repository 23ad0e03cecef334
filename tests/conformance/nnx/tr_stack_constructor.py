"""Stacks of modules from nnx.vmap (graph and tree mode) and nnx.scan."""

import jax
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, rngs):
    self.lin = nnx.Linear(2, 3, rngs=rngs)
    self.bn = nnx.BatchNorm(3, rngs=rngs)


keys = jax.random.split(jax.random.key(0), 3)
for graph in (True, False):
  stack = nnx.vmap(lambda k: Block(nnx.Rngs(k)), graph=graph)(keys)
  report.tree(f'vmap-{graph}', nnx.state(stack))


@nnx.vmap(in_axes=0, out_axes=0)
def make(rngs):
  return Block(rngs)


stack = make(nnx.Rngs(0).fork(split=4))
report.tree('fork-split', nnx.state(stack, nnx.Param))


def scan_make(c, k):
  return c + 1, Block(nnx.Rngs(k))


n, stack = nnx.scan(scan_make, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(
  0, keys
)
report.array('scan-n', n)
report.tree('scan-stack', nnx.state(stack, nnx.Param))
