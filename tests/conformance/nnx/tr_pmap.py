"""nnx.pmap on 8 CPU devices: modules, rngs, static args, axis_name."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

report.value('devices', jax.device_count())


class M(nnx.Module):
  def __init__(self, rngs):
    self.w = nnx.Param(rngs.params.uniform((2,)))
    self.n = nnx.BatchStat(jnp.array(0))


@nnx.split_rngs(splits=8)
@nnx.pmap(in_axes=(0,), out_axes=0, axis_size=8)
def make(rngs):
  return M(rngs)


m = make(nnx.Rngs(params=0))
report.tree('made', nnx.state(m))


@nnx.pmap(in_axes=(0, 0), axis_name='i')
def step(m, x):
  m.n[...] += 1
  return jax.lax.psum(m.w[...] * x, 'i')


x = jnp.arange(16.0).reshape(8, 2)
report.array('psum', step(m, x))
report.array('n', m.n[...])


@nnx.pmap(in_axes=(0, None), static_broadcasted_argnums=(1,))
def scale(x, k):
  return x * k


report.array('static', scale(jnp.arange(8.0), 4))

for graph in (True, False):
  y = nnx.pmap(lambda m, x: m.w[...] + x, in_axes=(0, 0), graph=graph)(m, x)
  report.array(f'mode-{graph}', y)
