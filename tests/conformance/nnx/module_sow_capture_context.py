"""Module.sow outside nnx.capture is deprecated (DeprecationWarning); inside
a capture (with or without Variable types) it is not, and a capture returns
only what its own call sowed: Variables the Modules held before are set
aside during the call and put back after."""

import jax.numpy as jnp
import report
from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.full((2,), 2.0))

  def __call__(self, x):
    self.sow(nnx.Intermediate, 'h', x * self.w)
    self.sow(nnx.Intermediate, 'h', x + 1)
    return x * 3


m = Model()
with report.warns('sow-outside-capture'):
  m(jnp.ones(2))
report.tree('held-before', nnx.state(m, nnx.Intermediate))

with report.warns('sow-inside-capture'):
  y, inter = nnx.capture(m, nnx.Intermediate)(jnp.full((2,), 5.0))
report.array('capture-out', y)
report.tree('captured', inter)
report.tree('held-after', nnx.state(m, nnx.Intermediate))

with report.warns('sow-inside-capture-without-types'):
  out = nnx.capture(m)(jnp.ones(2))
report.array('no-types-out', out)

fresh = Model()
_, inter = nnx.capture(nnx.Intermediate)(lambda mod, x: mod(x))(
  fresh, jnp.ones(2)
)
report.tree('fresh-captured', inter)
report.value('fresh-keeps-nothing', hasattr(fresh, 'h'))
