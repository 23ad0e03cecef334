"""Models and calls of the nnx.tabulate tests (expected tables in
data/tabulate/<case>.txt, as Flax 0.12.8 prints them). The models are built
from Variables only; tables of models made of NNX layers are tested with the
layers (tests/layers/nnx/test_nnx_tabulate.py)."""

import jax
import jax.numpy as jnp
from flax import nnx

WIDE = {'width': 200, 'force_terminal': False}


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


class E(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((3, 4)))

  def __call__(self, x):
    return x @ self.w[...]

  def attend(self, x):
    return x @ self.w[...].T


class Top(nnx.Module):
  def __init__(self, rngs):
    self.e = E()
    self.rngs = rngs
    self.count = nnx.BatchStat(jnp.array(0))

  def __call__(self, x):
    self.count[...] += 1
    n = jax.random.normal(self.rngs.params(), x.shape)
    return self.e.attend(self.e(x + n))


class Scale(nnx.Module):
  """Its VJP needs the gradients of both the input and the Param."""

  def __init__(self):
    self.p = nnx.Param(jnp.ones(3))

  def __call__(self, x):
    return x * self.p


class Child(nnx.Module):
  """Called through several methods (one row per object and inputs)."""

  def __init__(self):
    self.a = Scale()
    self.w = nnx.Param(jnp.ones((3, 2)))

  def __call__(self, x):
    return self.helper(self.a(x))

  def helper(self, x):
    return x * 2

  def encode(self, x):
    return x @ self.w[...]


class Parent(nnx.Module):
  def __init__(self, encode_first=False):
    self.child = Child()
    self.encode_first = encode_first

  def __call__(self, x):
    if self.encode_first:
      return self.child(self.child.encode(x)[:1] * jnp.ones(3))
    return self.child.encode(self.child(x))


def cases():
  """``{name: thunk returning the table}``."""
  x23 = jnp.ones((2, 3))
  return {
    'outer': lambda: nnx.tabulate(Outer(), x23, x23, console_kwargs=WIDE),
    'outer_depth0': lambda: nnx.tabulate(
      Outer(), x23, x23, depth=0, console_kwargs=WIDE
    ),
    'inner_method': lambda: nnx.tabulate(
      Inner(), x23, method='other', console_kwargs=WIDE
    ),
    'inner_flops': lambda: nnx.tabulate(
      Inner(),
      x23,
      compute_flops=True,
      compute_vjp_flops=True,
      console_kwargs=WIDE,
    ),
    'top_rngs': lambda: nnx.tabulate(
      Top(nnx.Rngs(0, params=1)), x23, console_kwargs=WIDE
    ),
    'e_flops': lambda: nnx.tabulate(
      E(), x23, compute_flops=True, compute_vjp_flops=True, console_kwargs=WIDE
    ),
    'scale_flops': lambda: nnx.tabulate(
      Scale(),
      jnp.ones(3),
      compute_flops=True,
      compute_vjp_flops=True,
      console_kwargs=WIDE,
    ),
    'e_vjp_flops': lambda: nnx.tabulate(
      E(), x23, compute_vjp_flops=True, console_kwargs=WIDE
    ),
    'methods_nested': lambda: nnx.tabulate(
      Parent(), jnp.ones(3), console_kwargs=WIDE
    ),
    'methods_encode_first': lambda: nnx.tabulate(
      Parent(encode_first=True), jnp.ones(3), console_kwargs=WIDE
    ),
  }
