"""bridge.ToNNX: Linen collections map to NNX Variable types by name."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Counter(nn.Module):
  @nn.compact
  def __call__(self, x):
    n = self.variable('counter', 'n', lambda: jnp.zeros((), jnp.int32))
    c = self.variable('cache', 'last', lambda: jnp.zeros_like(x))
    if not self.is_initializing():
      n.value += 1
      c.value = x
    return nn.Conv(2, (1,), name='proj')(x)


model = bridge.lazy_init(
  bridge.ToNNX(Counter(), rngs=nnx.Rngs(0)), jnp.ones((1, 3, 2))
)
report.value('n type', type(model.n).__name__)
report.value('n name', nnx.variable_name_from_type(type(model.n)))
report.value('last type', type(model.last).__name__)
report.value('proj', sorted(model.proj))
x = jnp.arange(6.0).reshape(1, 3, 2)
model(x, mutable=['counter', 'cache'])
model(x, mutable=True)
report.array('n', model.n[...], exact=True)
report.array('last', model.last[...])
