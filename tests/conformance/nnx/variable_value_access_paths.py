"""Deprecated .value on the Variables users meet (state leaves, Rngs
streams, sown intermediates, inside nnx.jit), and reads and writes going
through an overridden get_value / set_value."""

import warnings

import jax.numpy as jnp
import numpy as np
import report
from flax import nnx


def count(label, fn):
  with warnings.catch_warnings(record=True) as ws:
    warnings.simplefilter('always')
    out = fn()
  report.value(label, [str(w.message).splitlines()[0] for w in ws])
  return out


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.c = nnx.Cache(jnp.zeros(2))


m = Model()
state = nnx.state(m)
report.array('state-leaf', count('state-leaf-value', lambda: state['w'].value))
count('state-leaf-raw', lambda: state['w'].raw_value)
count('cache', lambda: m.c.value)
rngs = nnx.Rngs(0)
report.array('rng-key', count('rng-key-value', lambda: rngs.params.key.value))
report.array(
  'rng-count', count('rng-count-value', lambda: rngs.params.count.value)
)
inter = nnx.Intermediate((jnp.ones(1),))
count('intermediate', lambda: inter.value)


@nnx.jit
def f(m):
  return m.w.value * 2


report.array('jit-first', count('jit-first-call', lambda: f(m)))
report.array('jit-cached', count('jit-cached-call', lambda: f(m)))


class Scaled(nnx.Variable):
  def get_value(self, **kwargs):
    return super().get_value(**kwargs) * 10

  def set_value(self, value, **kwargs):
    return super().set_value(value + 1, **kwargs)


s = Scaled(jnp.ones(2))
report.array('override-getitem', s[...])
report.array('override-add', s + 1)
report.array('override-asarray', jnp.asarray(s))
report.text('override-repr', repr(s))
with report.warns('override-value-warns'):
  report.array('override-value', s.value)
s[0] = 5.0
report.array('override-setitem-index', s.get_raw_value())
s[...] = jnp.zeros(2)
report.array('override-setitem-all', s.get_raw_value())

p = nnx.Param(jnp.ones(2))
p[...] = jnp.array([1, 2])
report.array('setitem-casts', p.get_raw_value())
p[...] = 3.0
report.array('setitem-broadcasts', p.get_raw_value())
with report.raises('setitem-bad-shape'):
  p[...] = jnp.ones(3)
n = nnx.Variable(np.ones(2))
n[0] = 7
report.value('numpy-in-place', [type(n.get_raw_value()).__name__, n[0].item()])
