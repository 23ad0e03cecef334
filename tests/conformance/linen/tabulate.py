"""nn.tabulate text for a small CNN."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class CNN(nn.Module):
  @nn.compact
  def __call__(self, x, train: bool = False):
    x = nn.Conv(4, (3, 3))(x)
    x = nn.BatchNorm(use_running_average=not train)(x)
    x = nn.relu(x)
    x = x.reshape((x.shape[0], -1))
    return nn.Dense(3)(x)


text = nn.tabulate(CNN(), jax.random.key(0), console_kwargs={'width': 120})(
  jnp.ones((1, 4, 4, 1))
)
report.text('table', text)
