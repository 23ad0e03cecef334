"""transform_metadata when the function adds Variables to a mapped input
(the vectorised constructor): the new Variables get the partition name at
their stacked axis (vmap with an int or StateAxes, scan with an int); an
empty out_sharding gets none."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from jax.sharding import AxisType

LAYERS = {nnx.PARTITION_NAME: 'layers'}


class S(nnx.Module):
  def __init__(self):
    self.k = nnx.Param(
      jnp.zeros((3, 2)), out_sharding=('layers', 'a'), eager_sharding=False
    )


def grow(m, x):
  m.new = nnx.Param(x * 2, out_sharding=('b',), eager_sharding=False)
  m.cnt = nnx.BatchStat(jnp.zeros(()), out_sharding=(), eager_sharding=False)


def describe(m):
  return [
    m.new.out_sharding,
    list(m.new.shape),
    m.cnt.out_sharding,
    list(m.cnt.shape),
    m.k.out_sharding,
  ]


for name, ax in [
  ('int', 0),
  ('StateAxes', nnx.StateAxes({nnx.Param: 0, ...: None})),
]:
  m = S()
  nnx.vmap(grow, in_axes=(ax, 0), transform_metadata=LAYERS)(
    m, jnp.ones((3, 2))
  )
  report.value(f'vmap {name}', describe(m))

m = S()
nnx.scan(
  lambda c, m, x: (grow(m, x), c)[1],
  in_axes=(nnx.Carry, 0, 0),
  out_axes=nnx.Carry,
  transform_metadata=LAYERS,
)(0.0, m, jnp.ones((3, 2)))
report.value('scan int', describe(m))

mesh = jax.make_mesh(
  (2, 4), ('layers', 'model'), axis_types=(AxisType.Auto, AxisType.Auto)
)
seen = []


class Stack(nnx.Module):
  @nnx.split_rngs(splits=2)
  @nnx.vmap(
    in_axes=(nnx.StateAxes({nnx.Param: 0, ...: None}), 0),
    transform_metadata=LAYERS,
  )
  def __init__(self, rngs):
    self.w = nnx.Param(
      jax.random.normal(rngs.params(), (8, 4)), out_sharding=(None, 'model')
    )
    seen.append(self.w.out_sharding)


with jax.set_mesh(mesh):
  s = Stack(nnx.Rngs(0))
report.value('constructor inside', seen)
report.value('constructor after', s.w.out_sharding)
report.value('constructor spec', str(s.w[...].sharding.spec))
report.value('constructor shape', list(s.w.shape))

v = nnx.Param(jnp.zeros(()), out_sharding=(), eager_sharding=False)
report.value(
  'spmd.add_axis empty',
  nnx.spmd.add_axis(nnx.State({'v': v}), 0, LAYERS)['v'].out_sharding,
)
