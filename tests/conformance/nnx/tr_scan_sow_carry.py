"""Module.sow inside nnx.scan with the sowing Module scanned, broadcast or
carried, under nnx.capture (graph mode, graph_updates=False, tree mode):
scanned sows come back stacked, a sown carry is the carry TypeError."""

import jax.numpy as jnp
import report
from flax import nnx


class Cell(nnx.Module):
  def __init__(self, n=None):
    if n is None:
      self.w = nnx.Param(jnp.full((2,), 2.0))
    else:
      self.w = nnx.Param(jnp.arange(2.0 * n).reshape(n, 2))

  def __call__(self, x):
    self.sow(nnx.Intermediate, 'h', x * self.w)
    return x * self.w


class DictCell(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(6.0).reshape(3, 2))

  def __call__(self, c, x):
    self.sow(nnx.Intermediate, 'h', c['v'][...] + x)
    c['v'][...] = c['v'][...] * 0.5 + self.w * x
    return c


def attrs(m):
  return sorted(k for k in vars(m) if not k.startswith('_'))


for name, kw in [
  ('graph', dict()),
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:

  def dict_body(cell, c, x):
    return cell(c, x), x.sum()

  f = nnx.scan(
    dict_body, in_axes=(0, nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kw
  )
  cell, v = DictCell(), nnx.Variable(jnp.ones(2))
  (c, ys), inter = nnx.capture(f, nnx.Intermediate)(
    cell, {'v': v}, jnp.ones((3, 2))
  )
  report.value(f'{name} dict carry same Variable', c['v'] is v)
  report.array(f'{name} dict carry value', v[...])
  report.array(f'{name} dict ys', ys)
  report.value(f'{name} dict names', sorted(inter))
  report.array(f'{name} dict h', inter['h'].get_value()[0])
  report.value(f'{name} dict cell attributes', attrs(cell))

  def array_body(cell, c, x):
    y = cell(x)
    return c + y, y

  f = nnx.scan(
    array_body, in_axes=(0, nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kw
  )
  cell = Cell(3)
  (c, ys), inter = nnx.capture(f, nnx.Intermediate)(
    cell, jnp.zeros(2), jnp.ones((3, 2))
  )
  report.array(f'{name} scanned carry', c)
  report.array(f'{name} scanned h', inter['h'].get_value()[0])
  report.value(f'{name} scanned cell attributes', attrs(cell))

  def carried_body(cell, x):
    return cell, cell(x)

  f = nnx.scan(
    carried_body, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kw
  )
  with report.raises(f'{name} carried module sows'):
    nnx.capture(f, nnx.Intermediate)(Cell(), jnp.ones((3, 2)))

  def pytree_body(carry, x):
    cell, s = carry
    y = cell(x)
    return (cell, s + y), y

  f = nnx.scan(
    pytree_body, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kw
  )
  with report.raises(f'{name} module in carried pytree sows'):
    nnx.capture(f, nnx.Intermediate)((Cell(), jnp.zeros(2)), jnp.ones((3, 2)))

  def whole_body(cell):
    cell(jnp.ones(2))
    return cell

  f = nnx.scan(
    whole_body, in_axes=nnx.Carry, out_axes=nnx.Carry, length=3, **kw
  )
  with report.raises(f'{name} whole carry sows'):
    nnx.capture(f, nnx.Intermediate)(Cell())

# a broadcast Module's sows: dropped in graph mode
f = nnx.scan(array_body, in_axes=(None, nnx.Carry, 0), out_axes=(nnx.Carry, 0))
(c, _), inter = nnx.capture(f, nnx.Intermediate)(
  Cell(), jnp.zeros(2), jnp.ones((3, 2))
)
report.array('graph broadcast carry', c)
report.value('graph broadcast names', sorted(inter))
for name, kw in [
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  f = nnx.scan(
    array_body, in_axes=(None, nnx.Carry, 0), out_axes=(nnx.Carry, 0), **kw
  )
  with report.raises(f'{name} broadcast module sows'):
    nnx.capture(f, nnx.Intermediate)(Cell(), jnp.zeros(2), jnp.ones((3, 2)))
