"""bridge.with_partitioning: a Partitioned box in Linen, names in NNX."""

import flax
import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.core import meta
from flax.nnx import bridge
from flax import nnx

flax.config.update('flax_always_shard_variable', False)


class Proj(nnx.Module):
  def __init__(self, *, rngs):
    init = bridge.with_partitioning(
      nnx.initializers.lecun_normal(), ('embed', 'mlp')
    )
    self.w = nnx.Param(init(rngs.params(), (4, 2)))

  def __call__(self, x):
    return x @ self.w[...]


model = bridge.to_linen(Proj)
x = jnp.arange(8.0).reshape(2, 4) / 8
variables = model.init(jax.random.key(0), x)
w = variables['params']['w']
report.value('box', type(w).__name__)
report.value('is partitioned', isinstance(w, meta.Partitioned))
report.value('names', list(w.names))
report.value('spec', str(nn.get_partition_spec(variables)['params']['w']))
report.tree('unboxed', nn.unbox(variables))
report.array('y', model.apply(variables, x))
boxed = bridge.with_partitioning(nn.initializers.ones, ('a', None))(
  jax.random.key(0), (2, 2)
)
report.value('nnx metadata', sorted(boxed.metadata))
