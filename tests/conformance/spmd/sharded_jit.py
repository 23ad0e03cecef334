"""Linen init under jit with logical partitioning on a 2x4 mesh."""

import jax
import jax.numpy as jnp
import numpy as np
import report
from flax import linen as nn
from jax.sharding import Mesh

mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ('data', 'model'))
rules = (('batch', 'data'), ('hidden', 'model'))


class MLP(nn.Module):
  @nn.compact
  def __call__(self, x):
    return nn.Dense(
      8,
      kernel_init=nn.with_logical_partitioning(
        nn.initializers.lecun_normal(), (None, 'hidden')
      ),
    )(x)


x = jnp.ones((4, 6))
abstract = jax.eval_shape(MLP().init, jax.random.key(0), x)
specs = nn.get_partition_spec(abstract)
with mesh, nn.logical_axis_rules(rules):
  shardings = nn.logical_to_mesh_sharding(specs, mesh, rules)
  init = jax.jit(MLP().init, out_shardings=shardings)
  variables = init(jax.random.key(0), x)
kernel = variables['params']['Dense_0']['kernel']
report.value('kernel-spec', str(kernel.value.sharding.spec))
report.tree('variables', nn.unbox(variables))
