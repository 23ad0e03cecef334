"""nnx.scan: a graph node scanned over an int axis (or a StateAxes with
one axis) may gain attributes inside; the new leaves are stacked on that
axis. A broadcast node (in_axes None) that changes is a ValueError."""

import jax.numpy as jnp
import report
from flax import nnx


class Stacked(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(6.0).reshape(3, 2))


def step(c, m):
  m.extra = nnx.BatchStat(m.w[...] * 2)
  m.w[...] = m.w[...] + 1
  return c + m.w[...].sum(), c


for name, axis in [('axis0', 0), ('state-axes', nnx.StateAxes({...: 0}))]:
  m = Stacked()
  c, ys = nnx.scan(step, in_axes=(nnx.Carry, axis))(jnp.zeros(()), m)
  report.array(f'{name}-carry', c)
  report.array(f'{name}-ys', ys)
  report.tree(f'{name}-state', nnx.state(m))


def grow_row(c, m):
  m.extra = nnx.BatchStat(jnp.ones(4) * c)
  return c + 1, c


m = Stacked()
nnx.scan(grow_row, in_axes=(nnx.Carry, 1))(jnp.zeros(()), m)
report.array('axis1-extra', m.extra[...])

with report.raises('broadcast-node-grows'):
  nnx.scan(grow_row, in_axes=(nnx.Carry, None), length=3)(
    jnp.zeros(()), Stacked()
  )
