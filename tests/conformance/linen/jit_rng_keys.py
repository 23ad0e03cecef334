"""nn.jit: PRNG keys of a jitted method and of a jitted module called twice."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Model(nn.Module):
  @nn.compact
  def __call__(self, x):
    h = self.block(x)
    return h, jax.random.key_data(self.make_rng('dropout'))

  @nn.jit
  def block(self, x):
    return x * jax.random.uniform(self.make_rng('dropout'))


class Drop(nn.Module):
  @nn.compact
  def __call__(self, x):
    return x * jax.random.uniform(self.make_rng('dropout'))


class Loop(nn.Module):
  @nn.compact
  def __call__(self, x):
    block = nn.jit(Drop)()
    ys = [block(x) for _ in range(3)]
    return ys, Drop()(x), jax.random.key_data(self.make_rng('dropout'))


x = jnp.ones(2)
h, k = Model().apply({}, x, rngs={'dropout': jax.random.key(7)})
report.array('jitted method', h)
report.array('outer key after', k)
ys, plain, after = Loop().apply({}, x, rngs={'dropout': jax.random.key(3)})
for i, y in enumerate(ys):
  report.array(f'call {i}', y)
report.array('plain', plain)
report.array('loop key after', after)
