"""bridge.Module with NNX and Linen layers through the interop helpers."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge


class Block(bridge.Module):
  @bridge.compact
  def __call__(self, x):
    conv = bridge.nnx_in_bridge_mdl(
      lambda rngs: nnx.Conv(3, 4, (2,), rngs=rngs)
    )
    norm = bridge.linen_in_bridge_mdl(nn.LayerNorm())
    head = bridge.linen_in_bridge_mdl(nn.Conv(2, (1,)), name='head')
    return head(jax.nn.relu(norm(conv(x))))


x = jnp.arange(24.0).reshape(2, 4, 3) / 24
block = Block()
variables = block.init({'params': 1}, x)
report.tree('variables', variables)
report.array('y', block.apply(variables, x))
grads = jax.grad(lambda p: jnp.mean(block.apply({'params': p}, x) ** 2))(
  variables['params']
)
report.tree('grads', grads)
