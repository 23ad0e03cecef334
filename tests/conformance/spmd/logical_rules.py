"""Logical axis rules: logical_to_mesh_axes and partitioned params."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

rules = (('batch', 'data'), ('hidden', 'model'), ('embed', None))
report.value(
  'spec', str(nn.logical_to_mesh_axes(('batch', 'hidden', 'embed'), rules))
)
with nn.logical_axis_rules(rules):
  report.value('ctx-spec', str(nn.logical_to_mesh_axes(('hidden', 'batch'))))
  report.value('current', [list(r) for r in nn.get_logical_axis_rules()])


class Layer(nn.Module):
  @nn.compact
  def __call__(self, x):
    w = self.param(
      'w',
      nn.with_logical_partitioning(nn.initializers.ones, ('embed', 'hidden')),
      (x.shape[-1], 4),
    )
    return x @ w


variables = Layer().init(jax.random.key(0), jnp.ones((2, 3)))
boxed = variables['params']['w']
report.value('boxed-type', type(boxed).__name__)
report.value('names', list(boxed.names))
specs = nn.get_partition_spec(variables)
report.value('partition-spec', str(specs['params']['w']))
report.tree('unboxed', nn.unbox(variables))
