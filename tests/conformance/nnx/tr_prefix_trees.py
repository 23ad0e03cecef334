"""nnx.prefix results as in_axes / out_axes / out_shardings / in_shardings
of transforms without graph updates (graph and tree mode)."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((8,), ('d',))
m = nnx.Linear(2, 8, rngs=nnx.Rngs(0))
x = jnp.arange(8.0).reshape(4, 2)
for graph in (True, False):
  axes = nnx.prefix(m, {nnx.Param: None}, graph=graph)
  f = nnx.vmap(
    lambda m, x: m(x), in_axes=(axes, 0), graph=graph, graph_updates=False
  )
  report.array(f'vmap graph={graph}', f(m, x))

  shard = nnx.prefix(m, {...: NamedSharding(mesh, P())}, graph=graph)
  g = nnx.jit(
    lambda: nnx.Linear(2, 8, rngs=nnx.Rngs(0)),
    out_shardings=shard,
    graph=graph,
    graph_updates=False,
  )
  out = g()
  report.value(f'jit out graph={graph}', type(out.kernel.sharding).__name__)
  report.value(f'jit out spec graph={graph}', str(out.kernel.sharding.spec))
  report.array(f'jit out kernel graph={graph}', out.kernel[...])

  # a stacked model: kernel mapped, bias broadcast
  stacked = nnx.Linear(2, 3, rngs=nnx.Rngs(1))
  stacked.kernel = nnx.Param(jnp.arange(24.0).reshape(4, 2, 3))
  ax2 = nnx.prefix(
    stacked, {nnx.PathContains('kernel'): 0, ...: None}, graph=graph
  )
  h = nnx.vmap(
    lambda m, x: m(x), in_axes=(ax2, 0), graph=graph, graph_updates=False
  )
  report.array(f'vmap per-variable axes graph={graph}', h(stacked, x))

  col = nnx.prefix(
    m,
    {nnx.PathContains('kernel'): NamedSharding(mesh, P(None, 'd')), ...: None},
    graph=graph,
  )
  k = nnx.jit(
    lambda m: m.kernel[...] * 2,
    in_shardings=(col,),
    graph=graph,
    graph_updates=False,
  )
  y = k(m)
  report.value(f'jit in_shardings spec graph={graph}', str(y.sharding.spec))
  report.array(f'jit in_shardings value graph={graph}', y)
