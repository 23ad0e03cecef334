"""spmd.add_axis / remove_axis update out_sharding in place."""

import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import spmd

w = nnx.Param(jnp.ones((3, 4)), out_sharding=('a', 'b'), eager_sharding=False)
state = nnx.State({'w': w})
out = spmd.add_axis(state, 0, {nnx.PARTITION_NAME: 'layers'})
report.value('added', list(out['w'].out_sharding))
report.value('in place', list(state['w'].out_sharding))
spmd.remove_axis(state, 0, {nnx.PARTITION_NAME: 'layers'})
report.value('removed', list(state['w'].out_sharding))
spmd.add_axis(state, 2, {nnx.PARTITION_NAME: 'x'})
report.value('added last', list(state['w'].out_sharding))
with report.raises('no partition name'):
  spmd.add_axis(nnx.State({'w': nnx.Param(jnp.ones(2))}), 0, {})
