"""transform_metadata under nnx.scan / nnx.vmap: the mapped axis name is
removed from out_sharding inside and inserted into stacked outputs."""

import jax.numpy as jnp
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, rngs):
    self.w = nnx.Param(
      rngs.params.normal((2, 3)), out_sharding=('a', 'b'), eager_sharding=False
    )


@nnx.split_rngs(splits=4)
@nnx.vmap(
  in_axes=(0,), out_axes=0, transform_metadata={nnx.PARTITION_NAME: 'layers'}
)
def make(rngs):
  return Block(rngs)


b = make(nnx.Rngs(0))
seen = []


@nnx.scan(
  in_axes=(nnx.Carry, 0),
  out_axes=nnx.Carry,
  transform_metadata={nnx.PARTITION_NAME: 'layers'},
)
def run(x, blk):
  seen.append(list(blk.w.out_sharding))
  return x + blk.w[...].sum()


run(jnp.zeros(()), b)
report.value('inside-names', seen[0])
report.value('after-names', list(b.w.out_sharding))

for i, tm in enumerate(
  [{}, {nnx.PARTITION_NAME: None}, {nnx.PARTITION_NAME: 'L'}]
):
  _, made = nnx.split_rngs(splits=3)(
    nnx.scan(
      lambda c, r: (c, Block(r)), out_axes=(nnx.Carry, 1), transform_metadata=tm
    )
  )(0.0, nnx.Rngs(1))
  report.value(
    f'scan-out1-{i}', [list(made.w.out_sharding), list(made.w.shape)]
  )
  made = nnx.split_rngs(splits=3)(
    nnx.vmap(lambda r: Block(r), transform_metadata=tm)
  )(nnx.Rngs(1))
  report.value(f'vmap-out0-{i}', list(made.w.out_sharding))

vseen = []


@nnx.vmap(in_axes=(0, None), transform_metadata={nnx.PARTITION_NAME: 'layers'})
def vrun(blk, x):
  vseen.append(list(blk.w.out_sharding))
  return x + blk.w[...].sum()


report.array('vmap-out', vrun(b, 1.0))
report.value('vmap-inside-names', vseen[0])
