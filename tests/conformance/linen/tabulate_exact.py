"""nn.tabulate: the exact text (styles included) of a small model."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Lin(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    b = self.param('bias', nn.initializers.zeros, (self.features,))
    return x @ k + b[None]


class Model(nn.Module):
  @nn.compact
  def __call__(self, x, train=False):
    h = Lin(4)(x)
    return Lin(2, name='head')(h), {'h': h, 'flags': (train, None)}


x = jnp.ones((16, 9))
report.text('table', Model().tabulate(jax.random.key(0), x, train=True))
report.text(
  'depth 1 wide',
  nn.tabulate(
    Model(), jax.random.key(0), depth=1, console_kwargs={'width': 120}
  )(x),
)
