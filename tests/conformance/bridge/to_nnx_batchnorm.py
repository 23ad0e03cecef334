"""bridge.ToNNX(nn.BatchNorm): batch_stats as BatchStat, mutable updates."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

model = bridge.ToNNX(nn.BatchNorm(momentum=0.9), rngs=nnx.Rngs(0))
x = jnp.arange(12.0).reshape(4, 3) / 4
bridge.lazy_init(model, x, use_running_average=False)
report.value('mean type', type(model.mean).__name__)
report.value('scale type', type(model.scale).__name__)
report.tree('batch stats', nnx.state(model, nnx.BatchStat))
y = model(x, use_running_average=False, mutable=['batch_stats'])
report.array('train y', y)
report.tree('batch stats after', nnx.state(model, nnx.BatchStat))
report.array('eval y', model(x, use_running_average=True))
