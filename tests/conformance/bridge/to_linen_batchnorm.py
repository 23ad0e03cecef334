"""bridge.to_linen(nnx.BatchNorm): batch_stats collection, mutable apply."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import bridge

model = bridge.to_linen(nnx.BatchNorm, 3, momentum=0.8)
x = jnp.arange(12.0).reshape(4, 3) / 4
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
y, updates = model.apply(variables, x, mutable=['batch_stats'])
report.array('train y', y)
report.tree('updates', updates)
variables = {**variables, **updates}
y, updates = model.apply(variables, 2 * x, mutable=['batch_stats'])
report.tree('updates 2', updates)
report.array('frozen', model.apply(variables, x))
