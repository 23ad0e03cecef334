"""Linen tabulate: FLOP and VJP FLOP columns (variables used or not, batch
stats) and where the totals row puts its label."""

import re

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Unused(nn.Module):
  @nn.compact
  def __call__(self, x):
    self.param('p', nn.initializers.zeros, (10,))
    return x * 2


class Scale(nn.Module):
  @nn.compact
  def __call__(self, x):
    return x * self.param('p', nn.initializers.ones, (3,))


class Plain(nn.Module):
  @nn.compact
  def __call__(self, x):
    return x * 2


class Block(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.Dense(4)(x)
    return nn.relu(nn.BatchNorm(use_running_average=True)(x))


def table(module, x, **kw):
  text = nn.tabulate(
    module, jax.random.key(0), console_kwargs={'width': 120}, **kw
  )(x)
  return re.sub(r'\x1b\[[0-9;]*m', '', text)


x3 = jnp.ones((3,))
for m in (Unused(), Scale(), Plain()):
  report.text(
    type(m).__name__,
    table(m, x3, compute_flops=True, compute_vjp_flops=True),
  )
report.text('plain, no flops', table(Plain(), x3))
# One collection only, so that the column order does not depend on the
# hash seed.
block = table(Block(), jnp.ones((3, 5)), compute_vjp_flops=True)
report.value(
  'block vjp flops',
  [
    line.split('│')[5].strip()
    for line in block.splitlines()
    if line.count('│') > 6 and line.split('│')[5].strip().isdigit()
  ],
)
