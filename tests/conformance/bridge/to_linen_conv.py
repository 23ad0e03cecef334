"""bridge.to_linen(nnx.Conv): params from the Linen params stream."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import bridge

model = bridge.to_linen(nnx.Conv, 2, 3, (3, 3))
x = jnp.arange(32.0).reshape(1, 4, 4, 2) / 32
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))
named = bridge.to_linen(nnx.Conv, 2, 3, (3, 3), name='conv', use_bias=False)
report.value('name', named.name)
report.tree('no bias', named.init(jax.random.key(1), x))
