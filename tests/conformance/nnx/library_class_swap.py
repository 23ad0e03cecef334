"""A library wraps a model's calls by swapping the object's class
(``model.__class__ = type(name, (type(model),), {...})``)."""

import jax.numpy as jnp
import report
from flax import nnx


class A(nnx.Module):
  def __init__(self):
    self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

  def __call__(self, x):
    return 'A'


class B(A):
  def __call__(self, x):
    return 'B'


a = A()
a.__class__ = B
report.text('swapped', repr((type(a).__name__, a(1))))
report.value('class in vars', [k for k in vars(a) if 'class' in k])

m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
orig = type(m)
calls = []


def wrapped(self, x):
  calls.append(x.shape)
  return orig.__call__(self, x) * 0


m.__class__ = type('Wrapped' + orig.__name__, (orig,), {'__call__': wrapped})
report.text('wrapped type', type(m).__name__)
report.array('wrapped call', m(jnp.ones((1, 2))))
report.value('is Linear', isinstance(m, nnx.Linear))
graphdef, state = nnx.split(m)
report.text('merged type', type(nnx.merge(graphdef, state)).__name__)


@nnx.jit
def f(m, x):
  return m(x)


report.array('jitted call', f(m, jnp.ones((1, 2))))
report.text('calls', repr(calls))
report.text('repr', repr(m).splitlines()[0])


class P(nnx.Module):
  def __init__(self):
    self._w = nnx.Param(jnp.ones(2))

  @property
  def w(self):
    return self._w[...]

  @w.setter
  def w(self, v):
    self._w[...] = v * 2


p = P()
p.w = jnp.ones(2) * 3
report.array('property setter', p._w[...])
report.value('property not an attribute', 'w' in vars(p))

v = nnx.Param(jnp.ones(1))
v.__class__ = nnx.BatchStat
report.text('variable class', type(v).__name__)
report.value('variable metadata', sorted(v.get_metadata()))


class Sub(nnx.List):
  pass


lst = nnx.List([1, 2])
lst.__class__ = Sub
report.text('list class', repr((type(lst).__name__, list(lst))))
with report.raises('delete __class__'):
  del a.__class__
s = nnx.state(A())
s.__class__ = type(s)
report.value('state keys', sorted(s.keys()))
