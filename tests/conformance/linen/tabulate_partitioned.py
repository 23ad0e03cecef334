"""nn.tabulate: partition specs, depth cut-offs and nested inputs."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Lin(nn.Module):
  f: int

  @nn.compact
  def __call__(self, x):
    init = nn.with_partitioning(nn.initializers.lecun_normal(), (None, 'model'))
    k = self.param('kernel', init, (x.shape[-1], self.f))
    return x @ k


class Block(nn.Module):
  @nn.compact
  def __call__(self, x):
    return Lin(2)(Lin(3)(x))


class Id(nn.Module):
  @nn.compact
  def __call__(self, *args, **kwargs):
    return args, kwargs


class Model(nn.Module):
  @nn.compact
  def __call__(self, x):
    Id()(x, 1, 'a', None, [x, [x, 3]], {'d': {'e': x}}, k=x)
    Id()()
    return Block()(x)


x = jnp.ones((2, 3))
for depth in (None, 1):
  text = nn.tabulate(
    Model(), jax.random.key(0), depth=depth, console_kwargs={'width': 200}
  )(x)
  report.text(f'depth {depth}', text)
