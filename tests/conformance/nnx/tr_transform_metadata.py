"""transform_metadata on vmap/scan: sharding names get the mapped axis."""

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
  in_axes=(0,),
  out_axes=0,
  transform_metadata={nnx.PARTITION_NAME: 'layers'},
)
def make(rngs):
  return Block(rngs)


b = make(nnx.Rngs(0))
report.value('names', list(b.w.out_sharding))
report.value('shape', list(b.w.shape))
report.array('w', b.w[...])

seen = []


@nnx.scan(
  in_axes=(nnx.Carry, 0),
  out_axes=nnx.Carry,
  transform_metadata={nnx.PARTITION_NAME: 'layers'},
)
def run(x, blk):
  seen.append(list(blk.w.out_sharding))
  return x + blk.w[...].sum()


report.array('scan', run(jnp.zeros(()), b))
report.value('after-names', list(b.w.out_sharding))


@nnx.split_rngs(splits=2)
@nnx.vmap(
  in_axes=(0,), out_axes=1, transform_metadata={nnx.PARTITION_NAME: 'x'}
)
def make1(rngs):
  return Block(rngs)


b1 = make1(nnx.Rngs(1))
report.value('names-axis1', list(b1.w.out_sharding))
report.value('shape-axis1', list(b1.w.shape))
