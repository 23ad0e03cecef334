"""bridge.ToNNX: sow'd intermediates become Intermediate Variables."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Sow(nn.Module):
  @nn.compact
  def __call__(self, x):
    h = nn.Conv(2, (2,))(x)
    self.sow('intermediates', 'h', h)
    return jnp.sum(h)


model = bridge.lazy_init(
  bridge.ToNNX(Sow(), rngs=nnx.Rngs(1)), jnp.ones((1, 4, 3))
)
report.value(
  'after init', sorted(k for k in vars(model) if not k.startswith('_'))
)
x = jnp.arange(12.0).reshape(1, 4, 3) / 12
report.array('out', model(x, mutable=['intermediates']))
report.value('h type', type(model.h).__name__)
report.tree('h', model.h.get_value())
model(x, mutable=['intermediates'])
report.value('h count', len(model.h.get_value()))
