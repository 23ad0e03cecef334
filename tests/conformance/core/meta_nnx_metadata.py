"""Partitioned / LogicallyPartitioned to and from NNX metadata."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.core import meta

p = meta.Partitioned(jnp.ones(2), ('a',))
report.tree('to nnx', p.to_nnx_metadata())
report.text(
  'from nnx',
  repr(
    meta.Partitioned.from_nnx_metadata(
      {'value': 1, 'out_sharding': ('b',), 'mesh': None, 'x': 2}
    )
  ),
)
with report.raises('missing out_sharding'):
  meta.Partitioned.from_nnx_metadata({'value': 1, 'sharding_names': ('b',)})
lp = nn.LogicallyPartitioned(
  jnp.ones(2), ('a',), mesh=None, rules=(('a', 'X'),)
)
report.tree('logical to nnx', lp.to_nnx_metadata())
report.text(
  'logical from nnx',
  repr(
    nn.LogicallyPartitioned.from_nnx_metadata(
      {'value': 1, 'out_sharding': ('b',), 'sharding_rules': (('b', 'Y'),)}
    )
  ),
)
with report.raises('missing rules'):
  nn.LogicallyPartitioned.from_nnx_metadata(
    {'value': 1, 'out_sharding': ('b',)}
  )
report.value('no mesh', meta.global_mesh_defined())
with jax.set_mesh(jax.make_mesh((8,), ('X',))):
  report.value('mesh', meta.global_mesh_defined())
