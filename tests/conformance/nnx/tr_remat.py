"""nnx.remat: values and gradients equal the plain computation; tree mode."""

import jax.numpy as jnp
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, rngs):
    self.lin = nnx.Linear(3, 3, rngs=rngs)
    self.calls = nnx.BatchStat(jnp.array(0.0))

  def __call__(self, x):
    self.calls[...] += 1.0
    return jnp.sin(self.lin(x))


x = jnp.linspace(0.0, 1.0, 6).reshape(2, 3)
for graph in (True, False):
  m = Block(nnx.Rngs(0))
  y = nnx.remat(lambda m, x: m(x), graph=graph)(m, x)
  report.array(f'y-{graph}', y)
  report.array(f'calls-{graph}', m.calls[...])
  g = nnx.grad(
    lambda m: nnx.remat(lambda m, x: m(x), graph=graph)(m, x).sum(),
    graph=graph,
  )(m)
  report.tree(f'grad-{graph}', nnx.state(g, nnx.Param) if graph else g)


class Net(nnx.Module):
  def __init__(self, rngs):
    self.block = Block(rngs)

  @nnx.remat
  def __call__(self, x):
    return self.block(x) * 2


n = Net(nnx.Rngs(3))
report.array('method-y', n(x))
report.array('method-calls', n.block.calls[...])
m = Block(nnx.Rngs(0))
y = nnx.remat(lambda m, x, k: m(x) * k, static_argnums=(2,))(m, x, 3)
report.array('static', y)
