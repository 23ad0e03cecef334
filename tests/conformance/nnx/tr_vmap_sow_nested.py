"""Module.sow in nested Modules inside nnx.vmap under nnx.capture: batched
per Module path (graph mode, graph_updates=False, tree mode); a StateAxes
that broadcasts the captures is JAX's batching error."""

import jax.numpy as jnp
import report
from flax import nnx


class Leaf(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(6.0).reshape(3, 2))

  def __call__(self, x):
    self.sow(nnx.Intermediate, 'h', x * self.w)
    return x * self.w


class Tree(nnx.Module):
  def __init__(self):
    self.sub = Leaf()
    self.count = nnx.BatchStat(jnp.zeros((3,)))

  def __call__(self, x):
    self.sow(nnx.Intermediate, 'o', x.sum())
    return self.sub(x)


for name, kw in [
  ('graph', dict()),
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  m = Tree()
  f = nnx.vmap(lambda m, x: m(x), in_axes=(0, 0), **kw)
  y, inter = nnx.capture(f, nnx.Intermediate)(m, jnp.ones((3, 2)))
  report.array(f'{name} y', y)
  report.tree(f'{name} captured', inter.to_pure_dict())
  report.value(
    f'{name} attributes', sorted(k for k in vars(m) if not k.startswith('_'))
  )

ax = nnx.StateAxes({(nnx.Param, nnx.BatchStat): 0, ...: None})
with report.raises('StateAxes broadcasting the captures'):
  nnx.capture(nnx.vmap(lambda m, x: m(x), in_axes=(ax, 0)), nnx.Intermediate)(
    Tree(), jnp.ones((3, 2))
  )
