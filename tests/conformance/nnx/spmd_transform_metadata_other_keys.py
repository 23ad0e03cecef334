"""transform_metadata entries besides partition_name: vmap/scan and
nnx.spmd insert / remove their axis names in the Variables' tuple metadata
of that key, and hooks see the updated metadata."""

import jax.numpy as jnp
import report
from flax import nnx

META = {nnx.PARTITION_NAME: 'layers', 'alias': 'L', 'count': 'C'}
calls = []


class Named(nnx.Param):
  def add_axis(self, axis_index, axis_name):
    calls.append(('add', axis_index, axis_name, self.out_sharding, self.alias))
    super().add_axis(axis_index, axis_name)

  def remove_axis(self, axis_index, axis_name):
    calls.append(
      ('remove', axis_index, axis_name, self.out_sharding, self.alias)
    )
    super().remove_axis(axis_index, axis_name)


class Block(nnx.Module):
  def __init__(self):
    self.w = Named(
      jnp.ones((4,)),
      out_sharding=('din',),
      alias=('i',),
      count=3,
      eager_sharding=False,
    )
    self.b = nnx.Param(jnp.ones((4,)), alias=['i'], eager_sharding=False)

  @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry, transform_metadata=META)
  def __call__(self, x):
    calls.append(('inside', self.w.out_sharding, self.w.alias, self.b.alias))
    return x + self.w[...].sum()


for graph in (True, False):
  calls.clear()
  make = nnx.vmap(
    Block, in_axes=(), axis_size=2, transform_metadata=META, graph=graph
  )
  m = make()
  report.value(
    f'made-{graph}', [m.w.out_sharding, m.w.alias, m.w.count, m.b.alias]
  )
  if graph:
    report.array('called', m(jnp.zeros(())))
  report.value(f'calls-{graph}', [list(c) for c in calls])
  report.value(f'after-{graph}', [m.w.out_sharding, m.w.alias])

st = nnx.State(
  {
    'w': nnx.Param(
      jnp.ones((3, 4)),
      out_sharding=('a', 'b'),
      alias=('x', 'y'),
      eager_sharding=False,
    )
  }
)
nnx.spmd.add_axis(st, 2, {'alias': 'A', nnx.PARTITION_NAME: 'p'})
report.value('add-axis', [st['w'].out_sharding, st['w'].alias])
with report.raises('remove-mismatch'):
  nnx.spmd.remove_axis(st, 0, {nnx.PARTITION_NAME: 'a', 'alias': 'A'})
report.value('after-mismatch', [st['w'].out_sharding, st['w'].alias])
try:
  nnx.spmd.remove_axis(st, 1, {nnx.PARTITION_NAME: 'b', 'alias': 'q'})
except ValueError as e:
  report.text('mismatch-message', str(e))
