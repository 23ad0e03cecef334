"""nnx.tabulate of models made of NNX layers prints the tables of Flax 0.12.8
(data/tabulate/*.txt)."""

import pathlib

import pytest

import jax.numpy as jnp
from flax import nnx
from flax.nnx import summary

DATA = pathlib.Path(__file__).parent / 'data' / 'tabulate'
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


X32 = jnp.ones((1, 32))
CASES = {
  'linear_ansi': lambda: nnx.tabulate(
    nnx.Linear(2, 3, rngs=nnx.Rngs(0)), jnp.ones((1, 2))
  ),
  'mlp_ansi_80': lambda: nnx.tabulate(Foo(nnx.Rngs(0)), X32),
  'mlp_wide': lambda: nnx.tabulate(Foo(nnx.Rngs(0)), X32, console_kwargs=WIDE),
  'mlp_depth1': lambda: nnx.tabulate(
    Foo(nnx.Rngs(0)), X32, depth=1, console_kwargs=WIDE
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


@pytest.mark.parametrize('name', sorted(CASES))
def test_table_text(name):
  expected = (DATA / f'{name}.txt').read_text(encoding='utf-8')
  assert CASES[name]() == expected


def test_row_filter_and_depth():
  model = Foo(nnx.Rngs(0))
  table = nnx.tabulate(
    model,
    X32,
    row_filter=lambda row: True,
    console_kwargs={'width': 250, 'force_terminal': False},
  )
  # Without the default filter the RNG stream calls of Dropout show up.
  assert 'block1/dropout/rngs' in table
  assert (
    summary.filter_rng_streams(
      summary.CallInfo(0, 0, nnx.RngStream, (), '', None, None, None)
    )
    is False
  )
  table = nnx.tabulate(
    model, X32, depth=0, console_kwargs={'force_terminal': False}
  )
  assert 'block1' not in table
