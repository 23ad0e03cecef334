"""Module.sow inside nnx.scan without graph updates, under nnx.capture:
the sown values come back stacked over the steps."""

import jax.numpy as jnp
import report
from flax import nnx


class Cell(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(10.0).reshape(5, 2))

  def __call__(self, c, x):
    self.sow(nnx.Intermediate, 'h', c + x)
    return c * self.w + x, None


for name, kw in [
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:

  @nnx.scan(in_axes=(0, nnx.Carry, 0), **kw)
  def run(cell, c, xs):
    return cell(c, xs)

  cell = Cell()
  (c, _), inter = nnx.capture(run, nnx.Intermediate)(
    cell, jnp.zeros(2), jnp.ones((5, 2))
  )
  report.array(f'{name} carry', c)
  report.value(f'{name} names', sorted(inter))
  report.array(f'{name} h', inter['h'][0])
  report.value(
    f'{name} cell attributes',
    sorted(k for k in vars(cell) if not k.startswith('_')),
  )
