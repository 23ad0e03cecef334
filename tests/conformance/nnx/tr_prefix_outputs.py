"""nnx.prefix results as output prefixes without graph updates (graph and
tree mode): nnx.scan out_axes (a None in them is refused at creation) and
nnx.shard_map out_specs; shard_map writes back only the Variables the
function changed."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from jax.sharding import PartitionSpec as P


class M(nnx.Module):
  def __init__(self, n=4):
    self.w = nnx.Param(jnp.arange(2.0 * n).reshape(n, 2))
    self.b = nnx.Param(jnp.ones(2))


class C(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(16.0).reshape(8, 2))
    self.c = nnx.BatchStat(jnp.zeros(8))


def made(x):
  m = M()
  m.w = nnx.Param(x * 2)
  m.b = nnx.Param(x[0])
  return m


mesh = jax.make_mesh((8,), ('d',))
for graph in (True, False):
  kw = dict(graph=graph, graph_updates=False)
  p = nnx.prefix(M(), {...: 0}, graph=graph)
  _, out = nnx.scan(
    lambda c, x: (c, made(x)),
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, p),
    **kw,
  )(0.0, jnp.arange(8.0).reshape(4, 2))
  report.value(f'scan out type graph={graph}', type(out).__name__)
  report.array(f'scan out w graph={graph}', out.w[...])
  report.array(f'scan out b graph={graph}', out.b[...])
  bad = nnx.prefix(M(), {nnx.PathContains('w'): 0, ...: None}, graph=graph)
  with report.raises(f'scan out_axes None graph={graph}'):
    nnx.scan(
      lambda c, x: (c, made(x)),
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, bad),
      **kw,
    )

  m8 = M(8)
  out = nnx.shard_map(
    lambda m: M(8),
    mesh=mesh,
    in_specs=(nnx.prefix(m8, {...: P()}, graph=graph),),
    out_specs=nnx.prefix(M(8), {...: P()}, graph=graph),
    **kw,
  )(m8)
  report.value(f'shard_map out type graph={graph}', type(out).__name__)
  report.array(f'shard_map out w graph={graph}', out.w[...])

  c = C()
  w0, c0 = c.w[...], c.c[...]

  def bump(m):
    m.c[...] = m.c[...] + 1
    return m.w[...].sum()

  nnx.shard_map(bump, mesh=mesh, in_specs=(P(),), out_specs=P(), **kw)(c)
  report.value(
    f'shard_map unchanged kept graph={graph}',
    [c.w[...] is w0, c.w[...].committed, c.c[...] is c0],
  )
  report.array(f'shard_map changed graph={graph}', c.c[...])
