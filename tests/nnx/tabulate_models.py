"""Models and calls of the nnx.tabulate tests (expected tables in
data/tabulate/<case>.txt, as Flax 0.12.8 prints them)."""

import jax
import jax.numpy as jnp
from flax import nnx

WIDE = {'width': 200, 'force_terminal': False}


class Block(nnx.Module):
  def __init__(self, din, dout, rngs):
    self.linear = nnx.Linear(din, dout, rngs=rngs)
    self.bn = nnx.BatchNorm(dout, rngs=rngs)
    self.dropout = nnx.Dropout(0.2, rngs=rngs)

  def __call__(self, x):
    return nnx.relu(self.dropout(self.bn(self.linear(x))))


class Foo(nnx.Module):
  def __init__(self, rngs):
    self.block1 = Block(32, 128, rngs=rngs)
    self.block2 = Block(128, 10, rngs=rngs)

  def __call__(self, x):
    return self.block2(self.block1(x))


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


class CNN(nnx.Module):
  def __init__(self, *, rngs):
    self.conv1 = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
    self.bn = nnx.BatchNorm(4, rngs=rngs)
    self.linear = nnx.Linear(4 * 8 * 8, 10, rngs=rngs)

  def __call__(self, x):
    x = nnx.relu(self.bn(self.conv1(x)))
    return self.linear(x.reshape(x.shape[0], -1))


class WithRngs(nnx.Module):
  def __init__(self, rngs):
    self.rngs = rngs
    self.drop = nnx.Dropout(0.5)
    self.layers = nnx.List([nnx.Linear(3, 3, rngs=rngs) for _ in range(2)])

  def __call__(self, x):
    for layer in self.layers:
      x = self.drop(layer(x), rngs=self.rngs)
    return x


def cases():
  """``{name: thunk returning the table}``."""
  x32 = jnp.ones((1, 32))
  x23 = jnp.ones((2, 3))
  return {
    'linear_ansi': lambda: nnx.tabulate(
      nnx.Linear(2, 3, rngs=nnx.Rngs(0)), jnp.ones((1, 2))
    ),
    'mlp_ansi_80': lambda: nnx.tabulate(Foo(nnx.Rngs(0)), x32),
    'mlp_wide': lambda: nnx.tabulate(
      Foo(nnx.Rngs(0)), x32, console_kwargs=WIDE
    ),
    'mlp_depth1': lambda: nnx.tabulate(
      Foo(nnx.Rngs(0)), x32, depth=1, console_kwargs=WIDE
    ),
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
    'e_vjp_flops': lambda: nnx.tabulate(
      E(), x23, compute_vjp_flops=True, console_kwargs=WIDE
    ),
    'cnn_batchnorm': lambda: nnx.tabulate(
      CNN(rngs=nnx.Rngs(0)), jnp.ones((2, 8, 8, 1)), console_kwargs=WIDE
    ),
    'rngs_dropout': lambda: nnx.tabulate(
      WithRngs(nnx.Rngs(0, dropout=1)),
      jnp.ones((4, 3)),
      console_kwargs={'width': 120},
    ),
  }
