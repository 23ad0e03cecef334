"""bridge.ToNNX errors: immutable collections, calling before lazy_init."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

bn = bridge.ToNNX(nn.BatchNorm(use_running_average=False), rngs=nnx.Rngs(0))
bridge.lazy_init(bn, jnp.ones((2, 3)))
with report.raises('immutable batch_stats'):
  bn(jnp.ones((2, 3)))
conv = bridge.ToNNX(nn.Conv(2, (2,)), rngs=nnx.Rngs(0))
with report.raises('not initialized'):
  conv(jnp.ones((1, 4, 3)))
