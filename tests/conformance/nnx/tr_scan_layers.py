"""nnx.scan over a stack of layers made with nnx.vmap over the constructor."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, rngs):
    self.lin = nnx.Linear(3, 3, rngs=rngs)
    self.drop = nnx.Dropout(0.3, rngs=rngs)

  def __call__(self, x):
    return self.drop(jax.nn.relu(self.lin(x)))


@nnx.split_rngs(splits=4)
@nnx.vmap(in_axes=(0,), out_axes=0)
def make(rngs):
  return Block(rngs)


stack = make(nnx.Rngs(0))
report.tree('stack-params', nnx.state(stack, nnx.Param))
report.value('stack-key-shape', list(stack.drop.rngs.key.shape))

x = jnp.ones((2, 3))


@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
def forward(x, block):
  return block(x)


y = forward(x, stack)
report.array('y', y)
y2 = forward(x, stack)
report.array('y-again', y2)
report.array('rng-counts', stack.drop.rngs.count[...])
stack.eval()
report.array('y-eval', forward(x, stack))


@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
def forward_all(x, block):
  x = block(x)
  return x, x.sum()


stack.eval()
c, ys = forward_all(x, stack)
report.array('carry', c)
report.array('per-layer', ys)
