"""nnx.StateAxes / StateSharding built from a State of prefix values."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.linear = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    self.bn = nnx.BatchNorm(3, rngs=nnx.Rngs(0))


m = M()
st = jax.tree.map(lambda x: None, nnx.state(m))
st['linear']['kernel'] = 0
axes = nnx.StateAxes(st)
report.value(
  'kernel axis', axes.map_prefix(('linear', 'kernel'), m.linear.kernel)
)
report.value('mean axis', axes.map_prefix(('bn', 'mean'), m.bn.mean))
report.value('n filters', len(axes))
report.value('axes', sorted(axes.axes, key=repr))

m2 = M()
m2.linear.kernel = nnx.Param(jnp.arange(24.0).reshape(4, 2, 3))
f = nnx.vmap(lambda m, x: m.linear(x), in_axes=(axes, 0))
report.array('vmap out', f(m2, jnp.ones((4, 2))))
report.value('kernel shape after', list(m2.linear.kernel.shape))
