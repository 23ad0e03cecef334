"""bridge.Module with setup(), method= and attribute priorities."""

import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import bridge


class Scale(bridge.Module):
  def __init__(self, n):
    self.n = n

  def setup(self):
    self.s = nnx.Param(jnp.arange(float(self.n)))

  def __call__(self, x):
    return x * self.s[None]

  def shift(self, x):
    return x + self.s[None]


x = jnp.ones((2, 3))
model = Scale(3)
variables = model.init(0, x)
report.tree('variables', variables)
report.array('call', model.apply(variables, x))
report.array('by name', model.apply(variables, x, method='shift'))
report.array('by function', model.apply(variables, x, method=Scale.shift))
report.value('priorities', [p.name for p in bridge.AttrPriority])
report.value('priority values', [int(p) for p in bridge.AttrPriority])
report.value('attr_priorities', model.attr_priorities)
report.value('scope', model.scope is None)
