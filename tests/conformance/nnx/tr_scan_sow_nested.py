"""Module.sow in nested Modules inside nnx.scan under nnx.capture: stacked
per Module path (graph mode, graph_updates=False, tree mode; with
method_outputs); a StateAxes that broadcasts the captures drops them."""

import jax
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


def run(axes, method_outputs=None, **kw):
  f = nnx.scan(
    lambda m, c, x: (c + m(x), None),
    in_axes=(axes, nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
    **kw,
  )
  (c, _), inter = nnx.capture(
    f, nnx.Intermediate, method_outputs=method_outputs
  )(Tree(), jnp.zeros(2), jnp.ones((3, 2)))
  return c, inter


for name, kw in [
  ('graph', dict()),
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  c, inter = run(0, **kw)
  report.array(f'{name} carry', c)
  report.tree(f'{name} captured', inter.to_pure_dict())
  _, inter = run(0, nnx.Intermediate, **kw)
  report.value(
    f'{name} method_outputs shapes',
    jax.tree.map(lambda a: list(a.shape), inter.to_pure_dict()),
  )

c, inter = run(nnx.StateAxes({nnx.Param: 0, ...: None}))
report.array('StateAxes carry', c)
report.value('StateAxes captured', inter.to_pure_dict())
