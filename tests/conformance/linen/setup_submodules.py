"""setup()-style Linen modules, lists of submodules, bind, sow, variables."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn


class Block(nn.Module):
  def setup(self):
    self.layers = [nn.Dense(3), nn.Dense(2)]
    self.scale = self.param('scale', nn.initializers.ones, (2,))

  def __call__(self, x):
    for layer in self.layers:
      x = layer(x)
    self.sow('intermediates', 'out', x)
    return x * self.scale[None, :]


x = jnp.ones((1, 4))
variables = Block().init(jax.random.key(0), x)
report.tree('variables', variables)
y, state = Block().apply(variables, x, mutable=['intermediates'])
report.array('y', y)
report.tree('intermediates', state)
bound = Block().bind(variables)
report.array('bound-call', bound(x))
report.tree('bound-layer0', bound.layers[0].variables)
