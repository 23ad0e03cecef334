"""nnx.shard_map over an 8-device mesh with modules and PartitionSpecs."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((8,), ('d',), axis_types=(jax.sharding.AxisType.Auto,))


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(16.0).reshape(8, 2))
    self.n = nnx.BatchStat(jnp.zeros(()))


def f(m, x):
  m.n[...] += 1.0
  return jax.lax.psum(m.w[...] * x, 'd')


m = M()
specs = nnx.StateSharding({nnx.Param: P('d'), nnx.BatchStat: P()})
g = nnx.shard_map(f, mesh=mesh, in_specs=(specs, P('d')), out_specs=P())
y = g(m, jnp.arange(8.0).reshape(8, 1))
report.array('y', y)
report.array('n', m.n[...])
report.array('y-2', g(m, jnp.ones((8, 1))))
report.array('n-2', m.n[...])

with report.raises('statesharding-tree-mode'):
  nnx.shard_map(
    f, mesh=mesh, in_specs=(specs, P('d')), out_specs=P(), graph=False
  )(M(), jnp.ones((8, 1)))

with report.raises('spec-too-long-for-scalar'):
  nnx.shard_map(
    lambda m, x: m.w[...] + x,
    mesh=mesh,
    in_specs=(P('d'), P('d')),
    out_specs=P('d'),
  )(M(), jnp.ones((8, 2)))


def make():
  return M()


out = nnx.shard_map(make, mesh=mesh, in_specs=(), out_specs=P())()
report.text('ret-type', type(out).__name__)
report.array('ret-w', out.w[...])
