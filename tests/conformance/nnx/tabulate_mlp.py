"""nnx.tabulate of an MLP of blocks (Linear, BatchNorm, Dropout): the
default 80-column table with styles, a wide one and depth=1."""

import jax.numpy as jnp
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, din, dout, rngs):
    self.linear = nnx.Linear(din, dout, rngs=rngs)
    self.bn = nnx.BatchNorm(dout, rngs=rngs)
    self.dropout = nnx.Dropout(0.2, rngs=rngs)

  def __call__(self, x):
    return nnx.relu(self.dropout(self.bn(self.linear(x))))


class MLP(nnx.Module):
  def __init__(self, rngs):
    self.block1 = Block(32, 128, rngs=rngs)
    self.block2 = Block(128, 10, rngs=rngs)

  def __call__(self, x):
    return self.block2(self.block1(x))


model = MLP(nnx.Rngs(0))
x = jnp.ones((1, 32))
report.text('default', nnx.tabulate(model, x))
wide = {'width': 200, 'force_terminal': False}
report.text('wide', nnx.tabulate(model, x, console_kwargs=wide))
report.text('depth1', nnx.tabulate(model, x, depth=1, console_kwargs=wide))
