"""nnx.jit: adding / replacing attributes inside the traced function."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))


def add_attr(m):
  m.b = nnx.Param(jnp.full((2,), 3.0))
  return m.w[...]


m = M()
nnx.jit(add_attr)(m)
report.value('added-default', hasattr(m, 'b'))
report.tree('state-default', nnx.state(m))


def swap_var(m):
  m.w = nnx.Param(m.w[...] + 5.0)
  return None


m = M()
nnx.jit(swap_var)(m)
report.tree('swapped', nnx.state(m))
