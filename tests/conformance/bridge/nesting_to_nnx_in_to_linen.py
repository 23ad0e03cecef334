"""Nesting: a ToNNX-wrapped Linen layer inside an NNX Module run by ToLinen."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Hybrid(nnx.Module):
  def __init__(self, *, rngs):
    self.conv = bridge.lazy_init(
      bridge.ToNNX(nn.Conv(4, (2,)), rngs=rngs), jnp.ones((1, 4, 3))
    )
    self.norm = nnx.LayerNorm(4, rngs=rngs)

  def __call__(self, x):
    return self.norm(self.conv(x))


model = bridge.to_linen(Hybrid)
x = jnp.arange(12.0).reshape(1, 4, 3) / 12
variables = model.init(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', model.apply(variables, x))


class Outer(nn.Module):
  @nn.compact
  def __call__(self, x):
    return nn.Conv(2, (1,))(bridge.to_linen(Hybrid, name='hybrid')(x))


outer_vars = Outer().init(jax.random.key(3), x)
report.tree('outer variables', outer_vars)
report.array('outer y', Outer().apply(outer_vars, x))
