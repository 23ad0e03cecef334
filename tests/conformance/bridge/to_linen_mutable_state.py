"""bridge.to_linen: NNX state updates reach the mutable Linen collections."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import bridge


class Net(nnx.Module):
  def __init__(self, *, rngs):
    self.conv = nnx.Conv(3, 4, (1,), rngs=rngs)
    self.bn = nnx.BatchNorm(4, rngs=rngs)
    self.do = nnx.Dropout(0.5, rngs=rngs)
    self.steps = nnx.BatchStat(jnp.zeros((), jnp.int32))

  def __call__(self, x):
    self.steps[...] += 1
    return self.do(self.bn(self.conv(x)))


net = bridge.to_linen(Net)
x = jnp.arange(12.0).reshape(1, 4, 3) / 12
variables = net.init(
  {'params': jax.random.key(0), 'dropout': jax.random.key(1)}, x
)
report.tree('variables', variables)
y, updates = net.apply(
  variables, x, rngs={'dropout': jax.random.key(2)}, mutable=['batch_stats']
)
report.array('y', y)
report.tree('updates', updates)
y2 = net.apply(variables, x, rngs={'dropout': jax.random.key(2)})
report.array('immutable y', y2)
y3, all_updates = net.apply(
  variables, x, rngs={'dropout': jax.random.key(5)}, mutable=True
)
report.value('mutable=True collections', sorted(all_updates))
