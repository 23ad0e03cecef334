"""nnx.scan: carry modules, broadcast args, graph and tree mode, reverse."""

import jax.numpy as jnp
import report
from flax import nnx


class Acc(nnx.Module):
  def __init__(self):
    self.total = nnx.BatchStat(jnp.array(0.0))
    self.scale = nnx.Param(jnp.array(2.0))


xs = jnp.arange(5.0)

for graph in (True, False):
  for gu in (True, False):
    acc = Acc()

    def body(acc, x):
      acc.total[...] += x * acc.scale[...]
      return acc, acc.total[...]

    f = nnx.scan(
      body,
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      graph=graph,
      graph_updates=gu,
    )
    out, ys = f(acc, xs)
    report.array(f'ys-{graph}-{gu}', ys)
    report.array(f'total-{graph}-{gu}', acc.total[...])
    report.value(f'same-{graph}-{gu}', out is acc)


def bcast_body(c, m, x):
  return c + m.scale[...] * x, c


acc = Acc()
c, ys = nnx.scan(bcast_body, in_axes=(nnx.Carry, None, 0))(0.0, acc, xs)
report.array('bcast-c', c)
report.array('bcast-ys', ys)
c, ys = nnx.scan(bcast_body, in_axes=(nnx.Carry, None, 0), reverse=True)(
  0.0, acc, xs
)
report.array('rev-c', c)
report.array('rev-ys', ys)
c, ys = nnx.scan(bcast_body, in_axes=(nnx.Carry, None, 0), length=5, unroll=2)(
  0.0, acc, xs
)
report.array('unroll-ys', ys)
