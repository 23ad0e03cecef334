"""Common Linen mistakes raise Flax's error classes."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class NoCompact(nn.Module):
  def __call__(self, x):
    return nn.Dense(2)(x)


with report.raises('submodule outside compact'):
  NoCompact().init(jax.random.key(0), jnp.ones((1, 2)))


class Twice(nn.Module):
  @nn.compact
  def __call__(self, x):
    self.param('w', nn.initializers.ones, (1,))
    self.param('w', nn.initializers.ones, (1,))
    return x


with report.raises('name in use'):
  Twice().init(jax.random.key(0), jnp.ones((1,)))
with report.raises('unbound variables'):
  nn.Dense(2).variables
variables = nn.Dense(2).init(jax.random.key(0), jnp.ones((1, 3)))
with report.raises('shape mismatch'):
  nn.Dense(2).apply(variables, jnp.ones((1, 4)))
with report.raises('apply without params'):
  nn.Dense(2).apply({}, jnp.ones((1, 3)))
