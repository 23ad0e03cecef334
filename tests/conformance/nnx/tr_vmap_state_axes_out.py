"""nnx.vmap returning modules with StateAxes in out_axes."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self, x):
    self.w = nnx.Param(x * 2.0)
    self.s = nnx.BatchStat(jnp.array(1.0))


xs = jnp.arange(8.0).reshape(4, 2)
m = nnx.vmap(M, in_axes=0, out_axes=0)(xs)
report.tree('all0', nnx.state(m))

m = nnx.vmap(M, in_axes=0, out_axes=nnx.StateAxes({nnx.Param: 1, ...: None}))(
  xs
)
report.tree('param1', nnx.state(m))

for graph in (True,):
  m = nnx.vmap(
    M,
    in_axes=0,
    out_axes=nnx.StateAxes({nnx.Param: 0, nnx.BatchStat: None}),
    graph=graph,
  )(xs)
  report.tree(f'mixed-{graph}', nnx.state(m))
  report.text(f'type-{graph}', type(m).__name__)
