"""Nesting: ToLinen layers inside a Linen Module wrapped by ToNNX."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Mixed(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = bridge.to_linen(nnx.Conv, 3, 4, (2,), name='inner')(x)
    x = nn.BatchNorm(use_running_average=True)(x)
    x = nn.relu(x)
    return bridge.ToLinen(nnx.Conv, args=(4, 2, (1,)))(x)


model = bridge.ToNNX(Mixed(), rngs=nnx.Rngs(0))
x = jnp.arange(12.0).reshape(1, 4, 3) / 12
bridge.lazy_init(model, x)
report.tree('params', nnx.state(model, nnx.Param))
report.tree('batch stats', nnx.state(model, nnx.BatchStat))
report.value('inner type', type(model.inner).__name__)
report.array('y', model(x))
