"""bridge.to_linen: Variable metadata kept in NNXMeta boxes."""

import flax
import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge

flax.config.update('flax_always_shard_variable', False)


class Tagged(nnx.Module):
  def __init__(self, *, rngs):
    init = nnx.with_metadata(
      nnx.initializers.lecun_normal(), out_sharding=('in', 'out')
    )
    self.w = nnx.Param(init(rngs.params(), (3, 2)))
    self.b = nnx.Param(jnp.zeros((2,)))

  def __call__(self, x):
    return x @ self.w[...] + self.b[...][None]


model = bridge.to_linen(Tagged)
x = jnp.arange(6.0).reshape(2, 3) / 6
variables = model.init(jax.random.key(0), x)
w = variables['params']['w']
report.value('w box', type(w).__name__)
report.value('w var type', w.var_type.__name__)
report.value('w sharding', list(w.metadata['out_sharding']))
report.value('w spec', str(w.get_partition_spec()))
report.value('b box', type(variables['params']['b']).__name__)
report.tree('unboxed', nn.unbox(variables))
report.array('y', model.apply(variables, x))
report.value('var back', type(w.to_nnx_variable()).__name__)
