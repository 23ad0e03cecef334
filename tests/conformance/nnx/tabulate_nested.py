"""nnx.tabulate of a nested model: several inputs, keyword arguments, dict
and tuple outputs, custom Variable types, a submodule called twice,
depth=0 and another method of the root."""

import jax.numpy as jnp
import report
from flax import nnx


class MyParam(nnx.Param):
  pass


class Inner(nnx.Module):
  def __init__(self):
    self.w = MyParam(jnp.ones((3, 4)))
    self.c = nnx.Variable(jnp.zeros((2,), jnp.int32))

  def __call__(self, x, *, scale=1.0):
    return {'y': x @ self.w[...] * scale, 'n': (x.sum(), 3)}

  def other(self, x):
    return x


class Outer(nnx.Module):
  def __init__(self):
    self.inner = Inner()
    self.b = nnx.BatchStat(jnp.zeros((5,), jnp.bfloat16))
    self.big = nnx.Param(jnp.zeros((600, 1000)))

  def __call__(self, x, y):
    a = self.inner(x, scale=2.0)
    b = self.inner(y)
    return a['y'] + b['y']


wide = {'width': 200, 'force_terminal': False}
x = jnp.ones((2, 3))
report.text('outer', nnx.tabulate(Outer(), x, x, console_kwargs=wide))
report.text('depth0', nnx.tabulate(Outer(), x, x, depth=0, console_kwargs=wide))
report.text(
  'method', nnx.tabulate(Inner(), x, method='other', console_kwargs=wide)
)
