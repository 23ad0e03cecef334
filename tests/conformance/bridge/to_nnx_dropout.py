"""bridge.ToNNX(nn.Dropout): keys drawn from the wrapper's Rngs per call."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

model = bridge.ToNNX(nn.Dropout(0.5), rngs=nnx.Rngs(params=0, dropout=3))
x = jnp.ones((3, 5))
bridge.lazy_init(model, x, deterministic=True)
report.array('first', model(x, deterministic=False), exact=True)
report.array('second', model(x, deterministic=False), exact=True)
report.array(
  'call rngs',
  model(x, deterministic=False, rngs=nnx.Rngs(dropout=9)),
  exact=True,
)
report.array(
  'call key', model(x, deterministic=False, rngs=jax.random.key(4)), exact=True
)
report.tree('counts', nnx.state(model, nnx.RngCount))
report.array('deterministic', model(x, deterministic=True), exact=True)
