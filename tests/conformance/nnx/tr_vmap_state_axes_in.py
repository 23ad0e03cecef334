"""nnx.vmap with StateAxes in in_axes: mapped params, broadcast stats."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(6.0).reshape(3, 2))
    self.count = nnx.BatchStat(jnp.array(0.0))

  def __call__(self, x):
    self.count[...] += 1.0
    return x * self.w[...]


x = jnp.arange(6.0).reshape(3, 2)

m = M()
axes = nnx.StateAxes({nnx.Param: 0, nnx.BatchStat: None})
y = nnx.vmap(lambda m, x: m(x), in_axes=(axes, 0))(m, x)
report.array('y', y)
report.tree('state', nnx.state(m))

m = M()
axes1 = nnx.StateAxes({nnx.Param: 1, ...: None})
y = nnx.vmap(lambda m, x: m(x), in_axes=(axes1, 1))(m, x)
report.array('y-axis1', y)

m = M()
y = nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(m, jnp.ones((4, 3, 2)))
report.array('y-bcast', y)
report.array('count-bcast', m.count[...])

m = M()
m.count = nnx.BatchStat(jnp.zeros(3))
y = nnx.vmap(lambda m, x: m(x), in_axes=(0, 0))(m, x)
report.array('y-all0', y)
report.array('count-all0', m.count[...])

with report.raises('stateaxes-no-graph-updates'):
  nnx.vmap(lambda m, x: m(x), in_axes=(axes, 0), graph_updates=False)(M(), x)

with report.raises('stateaxes-tree-mode'):
  nnx.vmap(lambda m, x: m(x), in_axes=(axes, 0), graph=False)(M(), x)
