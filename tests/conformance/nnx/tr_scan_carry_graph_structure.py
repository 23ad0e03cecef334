"""Graph-mode nnx.scan with a carried Module whose structure changes in the
step: static attributes and a Variable replaced by a like one are kept (the
carry's state is unchanged); a retyped, deleted or re-annotated Variable is
the carry TypeError."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.zeros(2))
    self.s = 0


def run(body):
  m = M()
  a0 = m.a
  (m2, _), xs = nnx.scan(body)((m, jnp.zeros(2)), jnp.ones((3, 2)))
  return m, m2 is m, m.a is a0, xs


def static(c, x):
  m, y = c
  m.s = m.s + 1
  m.t = 'new'
  return (m, y), x


def replaced(c, x):
  m, y = c
  m.a = nnx.Param(m.a[...] + x)
  return (m, y), x


m, same, same_a, xs = run(static)
report.value('static', [same, same_a, m.s, m.t, type(m.a).__name__])
report.array('static a', m.a[...])
report.array('static xs', xs)
m, same, same_a, xs = run(replaced)
report.value('replaced', [same, same_a, type(m.a).__name__])
report.array('replaced a', m.a[...])


def retyped(c, x):
  m, y = c
  m.a = nnx.BatchStat(m.a[...] + x)
  return (m, y), x


def deleted(c, x):
  m, y = c
  del m.a
  return (m, y), x


def annotated(c, x):
  m, y = c
  m.a = nnx.Param(m.a[...] + x, foo=1)
  return (m, y), x


def reshaped(c, x):
  m, y = c
  m.a = nnx.Param(jnp.zeros(3))
  return (m, y), x


for name, body in [
  ('retyped', retyped),
  ('deleted', deleted),
  ('annotated', annotated),
  ('reshaped', reshaped),
]:
  with report.raises(name):
    run(body)
