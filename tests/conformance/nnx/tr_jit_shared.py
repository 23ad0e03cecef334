"""nnx.jit with shared Variables and shared sub-modules."""

import jax.numpy as jnp
import report
from flax import nnx


class Pair(nnx.Module):
  def __init__(self, lin):
    self.a = lin
    self.b = lin


lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
p = Pair(lin)


@nnx.jit
def f(p, x):
  p.a.kernel[...] = p.a.kernel[...] + 1.0
  return p.b(x), p.a is p.b


y, same = f(p, jnp.ones((1, 2)))
report.array('y', y)
report.value('same-inside', bool(same))
report.value('same-after', p.a is p.b)
report.tree('state', nnx.state(p))


@nnx.jit
def g(m1, m2):
  m1.bias[...] += 1.0
  return m1 is m2, m2.bias[...]


same, b = g(lin, lin)
report.value('two-args-same', bool(same))
report.array('two-args-bias', b)
report.array('bias-after', lin.bias[...])

with report.raises('tree mode shared'):
  nnx.jit(lambda p: p.a.kernel[...], graph=False)(p)
