"""nnx.scan and nnx.jit over a model holding a ToNNX-wrapped Linen cell."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

cell = bridge.ToNNX(nn.Conv(3, (1,)), rngs=nnx.Rngs(0))
bridge.lazy_init(cell, jnp.ones((1, 2, 3)))


@nnx.scan(in_axes=(None, nnx.Carry, 0), out_axes=(nnx.Carry, 0))
def run(model, c, x):
  c = jnp.tanh(model(c) + x)
  return c, c


c0 = jnp.zeros((1, 2, 3))
xs = jnp.arange(24.0).reshape(4, 1, 2, 3) / 24
c, ys = run(cell, c0, xs)
report.array('carry', c)
report.array('ys', ys)
c2, _ = nnx.jit(run)(cell, c0, xs)
report.array('jit carry', c2)
report.tree('params', nnx.state(cell, nnx.Param))
