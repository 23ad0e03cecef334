"""NNX BatchNorm: train/eval switching and running statistics."""

import jax.numpy as jnp
import report
from flax import nnx

bn = nnx.BatchNorm(4, momentum=0.9, rngs=nnx.Rngs(0))
x = jnp.arange(12.0).reshape(3, 4)
report.array('train', bn(x))
report.tree('stats', nnx.state(bn, nnx.BatchStat))
bn.eval()
report.array('eval', bn(x))
report.array('eval-override', bn(x, use_running_average=False))
