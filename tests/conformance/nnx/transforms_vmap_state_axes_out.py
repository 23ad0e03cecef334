"""nnx.vmap over a Module constructor with StateAxes in out_axes."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, rngs):
    self.w = nnx.Param(rngs.params.normal((2,)))
    self.stat = nnx.BatchStat(jnp.zeros(()))


@nnx.vmap(in_axes=0, out_axes=nnx.StateAxes({nnx.Param: 0, ...: None}))
def create(key):
  return Block(nnx.Rngs(key))


m = create(jax.random.split(jax.random.key(0), 3))
report.array('w', m.w[...])
report.array('stat', m.stat[...])


@nnx.vmap(in_axes=0, out_axes=nnx.StateAxes({nnx.Param: 1, ...: None}))
def create_t(key):
  return Block(nnx.Rngs(key))


report.array('w-axis1', create_t(jax.random.split(jax.random.key(1), 4)).w[...])
