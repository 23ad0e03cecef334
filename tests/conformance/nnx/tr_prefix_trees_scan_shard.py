"""nnx.prefix results as scan in_axes, shard_map in_specs and pmap in_axes
(graph_updates=False, graph and tree mode)."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

mesh = jax.make_mesh((8,), ('d',))
P = jax.P
for graph in (True, False):
  m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
  m.kernel = nnx.Param(jnp.arange(24.0).reshape(4, 2, 3))
  ax = nnx.prefix(m, {nnx.PathContains('kernel'): 0, ...: None}, graph=graph)

  @nnx.scan(
    in_axes=(nnx.Carry, ax),
    out_axes=nnx.Carry,
    graph=graph,
    graph_updates=False,
  )
  def f(c, m):
    return c @ m.kernel[...][:, :2] + m.bias[...][:2]

  report.array(f'scan graph={graph}', f(jnp.ones(2), m))

  m2 = nnx.Linear(8, 8, rngs=nnx.Rngs(0))
  m2.kernel = nnx.Param(
    jax.device_put(m2.kernel[...], jax.NamedSharding(mesh, P(None, 'd')))
  )
  m2.bias = nnx.Param(
    jax.device_put(m2.bias[...], jax.NamedSharding(mesh, P()))
  )
  xs = jax.device_put(jnp.ones(8), jax.NamedSharding(mesh, P('d')))
  sp = nnx.prefix(
    m2, {nnx.PathContains('kernel'): P(None, 'd'), ...: P()}, graph=graph
  )
  g = nnx.shard_map(
    lambda m, x: m.kernel[...].sum(0) + x,
    mesh=mesh,
    in_specs=(sp, P('d')),
    out_specs=P('d'),
    graph=graph,
    graph_updates=False,
  )
  report.array(f'shard_map graph={graph}', g(m2, xs))

  m3 = nnx.Linear(8, 8, rngs=nnx.Rngs(0))
  pm = nnx.prefix(m3, {...: None}, graph=graph)
  h = nnx.pmap(
    lambda m, x: m(x), in_axes=(pm, 0), graph=graph, graph_updates=False
  )
  report.array(f'pmap graph={graph}', h(m3, jnp.ones((8, 8))))
