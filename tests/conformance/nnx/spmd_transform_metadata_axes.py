"""Sharding names through mapped transforms: nnx.vmap with a partition name
removes the mapped axis inside and puts it back once, where it was, on
Variables passed in and returned; nnx.transform_metadata likewise."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

with nnx.use_eager_sharding(False):
  seen = []

  @nnx.vmap(
    in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: 'layers'}
  )
  def create(key):
    kernel_init = nnx.with_partitioning(nnx.initializers.ones, ('din', 'dout'))
    layer = nnx.Linear(2, 3, kernel_init=kernel_init, rngs=nnx.Rngs(key))
    seen.append(layer.kernel.out_sharding)
    return layer

  layer = create(jax.random.split(jax.random.key(0), 4))
  report.value('inside create', [list(s) for s in seen])
  report.value('after create', list(layer.kernel.out_sharding))

  seen = []

  @nnx.vmap(
    in_axes=(0, None),
    out_axes=0,
    transform_metadata={nnx.PARTITION_NAME: 'layers'},
  )
  def apply(layer, x):
    seen.append(layer.kernel.out_sharding)
    return layer(x)

  report.value('apply shape', list(apply(layer, jnp.ones((1, 2))).shape))
  report.value('inside apply', [list(s) for s in seen])
  report.value('after apply', list(layer.kernel.out_sharding))

  seen = []

  @nnx.vmap(
    in_axes=(1, None),
    out_axes=1,
    transform_metadata={nnx.PARTITION_NAME: 'layers'},
  )
  def identity(v, x):
    seen.append(v.out_sharding)
    return v

  v = nnx.Param(jnp.ones((2, 4, 3)), out_sharding=('din', 'layers', 'dout'))
  report.value('returned input', list(identity(v, 1).out_sharding))
  report.value('inside identity', [list(s) for s in seen])
  report.value('input after', list(v.out_sharding))

  seen = []
  f = nnx.transform_metadata(in_axes=0, out_axes=1, partition='din')(
    lambda v: (
      seen.append(v.out_sharding),
      nnx.Param(
        jnp.array(1), out_sharding=('dmid', 'dout'), eager_sharding=False
      ),
    )[1]
  )
  w = nnx.Param(
    jnp.array(0), out_sharding=('din', 'dout'), eager_sharding=False
  )
  report.value('transform_metadata output', list(f(w).out_sharding))
  report.value('transform_metadata inside', [list(s) for s in seen])
  report.value('transform_metadata input after', list(w.out_sharding))
