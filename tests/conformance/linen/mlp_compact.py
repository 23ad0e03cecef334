"""A compact Linen MLP: names, tree, outputs, tabulate-free summary."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class MLP(nn.Module):
  features: tuple = (8, 4)

  @nn.compact
  def __call__(self, x):
    for i, f in enumerate(self.features):
      x = nn.Dense(f, name=f'layer{i}')(x)
      if i < len(self.features) - 1:
        x = nn.relu(x)
    return x


class Auto(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.Dense(3)(x)
    return nn.Dense(2)(x)


x = jnp.linspace(-1, 1, 12).reshape(2, 6)
variables = MLP().init(jax.random.key(42), x)
report.tree('variables', variables)
report.array('y', MLP().apply(variables, x))
report.tree('auto-names', Auto().init(jax.random.key(1), x), values=False)
