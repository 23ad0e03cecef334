"""nnx.scan with StateAxes: Params scanned, BatchStat carried."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(8.0).reshape(4, 2))
    self.total = nnx.BatchStat(jnp.zeros(2))


axes = nnx.StateAxes({nnx.Param: 0, nnx.BatchStat: nnx.Carry})


def body(m, x):
  m.total[...] += m.w[...] * x
  return m.total[...].sum()


m = M()
ys = nnx.scan(body, in_axes=(axes, 0), out_axes=0)(m, jnp.arange(4.0))
report.array('ys', ys)
report.tree('state', nnx.state(m))

m = M()
axes_b = nnx.StateAxes({nnx.Param: None, nnx.BatchStat: nnx.Carry})


def body_b(m, x):
  m.total[...] += m.w[...].sum(0) * x
  return m.total[...]


ys = nnx.scan(body_b, in_axes=(axes_b, 0), out_axes=0)(m, jnp.arange(3.0))
report.array('bcast-ys', ys)
report.array('bcast-total', m.total[...])
