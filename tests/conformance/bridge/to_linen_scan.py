"""nn.scan over a ToLinen cell (params broadcast) and stacked layers."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Cell(nnx.Module):
  def __init__(self, *, rngs):
    self.conv = nnx.Conv(3, 3, (1,), rngs=rngs)

  def __call__(self, c, x):
    c = jnp.tanh(self.conv(c) + x)
    return c, c


Scan = nn.scan(
  bridge.ToLinen,
  variable_broadcast='params',
  split_rngs={'params': False},
  in_axes=0,
  out_axes=0,
)
cell = Scan(Cell)
c0 = jnp.zeros((1, 2, 3))
xs = jnp.arange(18.0).reshape(3, 1, 2, 3) / 18
variables = cell.init(jax.random.key(0), c0, xs)
report.tree('variables', variables)
c, ys = cell.apply(variables, c0, xs)
report.array('carry', c)
report.array('ys', ys)


class Layer(nnx.Module):
  def __init__(self, *, rngs):
    self.conv = nnx.Conv(3, 3, (1,), rngs=rngs)

  def __call__(self, c, _):
    return jnp.tanh(self.conv(c)), None


Stack = nn.scan(
  bridge.ToLinen,
  variable_axes={'params': 0},
  split_rngs={'params': True},
  length=4,
)
stack = Stack(Layer)
sv = stack.init(jax.random.key(1), c0, None)
report.tree('stacked', sv)
report.array('stacked out', stack.apply(sv, c0, None)[0])
