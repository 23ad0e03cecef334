"""nnx sharding metadata and get_partition_spec (eager sharding off)."""

import jax.numpy as jnp
import report
from flax import nnx

with nnx.use_eager_sharding(False):
  p = nnx.Param(jnp.ones((2, 4)), out_sharding=(None, 'model'))
  report.value('names', list(p.out_sharding))
  spec = nnx.get_partition_spec(nnx.State({'w': p}))
  report.value('spec', str(spec['w'].get_value()))
  lin = nnx.Linear(
    2,
    4,
    kernel_init=nnx.with_partitioning(
      nnx.initializers.lecun_normal(), (None, 'model')
    ),
    rngs=nnx.Rngs(0),
  )
  report.value('kernel-names', list(lin.kernel.out_sharding))
  report.tree('kernel', nnx.state(lin))
