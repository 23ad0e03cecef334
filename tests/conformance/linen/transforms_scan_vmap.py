"""nn.scan and nn.vmap: parameter trees and outputs."""

import functools

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Cell(nn.Module):
  @nn.compact
  def __call__(self, c, x):
    h = nn.Dense(3)(jnp.concatenate([c, x], -1))
    return h, h


ScanCell = nn.scan(
  Cell,
  variable_broadcast='params',
  split_rngs={'params': False},
  in_axes=1,
  out_axes=1,
)
x = jnp.ones((2, 5, 4))
c = jnp.zeros((2, 3))
variables = ScanCell().init(jax.random.key(0), c, x)
report.tree('scan-variables', variables)
carry, ys = ScanCell().apply(variables, c, x)
report.array('scan-ys', ys)

VDense = nn.vmap(
  nn.Dense,
  in_axes=0,
  out_axes=0,
  variable_axes={'params': 0},
  split_rngs={'params': True},
)
vx = jnp.ones((3, 2, 4))
vvars = VDense(5).init(jax.random.key(1), vx)
report.tree('vmap-variables', vvars)
report.array('vmap-y', VDense(5).apply(vvars, vx))


class Remat(nn.Module):
  @nn.compact
  def __call__(self, x):
    return nn.remat(nn.Dense)(2)(x)


rv = Remat().init(jax.random.key(2), jnp.ones((1, 3)))
report.tree('remat', rv)
del functools
