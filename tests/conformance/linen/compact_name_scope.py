"""nn.compact_name_scope: submodule names per method."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Lin(nn.Module):
  f: int

  @nn.compact
  def __call__(self, x):
    return x @ self.param('k', nn.initializers.ones, (x.shape[-1], self.f))


class AutoEncoder(nn.Module):
  def setup(self):
    self.proj = Lin(2)

  @nn.compact_name_scope
  def encode(self, x):
    self.sow('intermediates', 'x', x)
    return Lin(3)(x)

  @nn.compact_name_scope
  def decode(self, x):
    return Lin(2, name='out')(x)

  def __call__(self, x):
    return self.proj(self.decode(self.encode(self.encode(x)[..., :2])))


model = AutoEncoder()
x = jnp.ones((1, 2))
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('apply', model.apply(variables, x))
report.array('encode', model.apply(variables, x, method='encode'))
_, state = model.apply(variables, x, mutable=['intermediates'])
report.tree('intermediates', state)


class Twice(nn.Module):
  @nn.compact_name_scope
  def f(self, x):
    return x + self.param('b', nn.initializers.zeros, x.shape)

  @nn.compact
  def __call__(self, x):
    return self.f(self.f(x))


with report.raises('param twice'):
  Twice().init(jax.random.key(0), x)


class NotCompact(nn.Module):
  @nn.compact_name_scope
  def f(self, x):
    return x + self.param('b', nn.initializers.zeros, x.shape)

  def __call__(self, x):
    return self.f(x)


with report.raises('param outside compact'):
  NotCompact().init(jax.random.key(0), x)
