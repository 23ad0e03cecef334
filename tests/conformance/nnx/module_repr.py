"""Module reprs: insertion order, short arrays, counts per Variable type,
hidden private attributes, shared and cyclic references."""

import jax.numpy as jnp
import numpy as np
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.z = 1
    self.a = nnx.Param(jnp.ones(2))
    self.f = jnp.float32
    self.cls = int
    self.lst = [1, 2]
    self.arr = jnp.zeros(3)
    self.np = np.zeros(2)
    self.one = jnp.zeros(1)
    self.e = jnp.zeros((0,))
    self.s = 'hi'
    self.d = nnx.data({'x': 1, 'y': jnp.ones(2)})
    self.sd = {'x': 1}
    self.none = None
    self.dt = jnp.dtype('float32')
    self.bs = nnx.BatchStat(jnp.zeros(1))
    self.c = nnx.Cache(jnp.ones(2))
    self.l = nnx.List([jnp.ones(2)])
    self._priv = 3


with report.printed('module'):
  print(M())


class Leaf(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.zeros(1))


class H(nnx.Module):
  def __init__(self):
    self.a = Leaf()
    self.b = self.a


with report.printed('shared'):
  print(H())


class G(nnx.Module):
  def __init__(self):
    self.ref = None


g = G()
g.ref = nnx.data(g)
with report.printed('cycle'):
  print(g)


class E(nnx.Module):
  pass


with report.printed('empty'):
  print(E())
