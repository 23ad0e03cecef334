"""Linen BatchNorm: train mode updates batch_stats, eval uses them."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

model = nn.BatchNorm(momentum=0.9)
x = jnp.arange(12.0).reshape(3, 4)
variables = model.init(jax.random.key(0), x, use_running_average=False)
report.tree('variables', variables)
y, updates = model.apply(
  variables, x, use_running_average=False, mutable=['batch_stats']
)
report.array('y-train', y)
report.tree('batch-stats', updates)
report.array('y-eval', model.apply(variables, x, use_running_average=True))
