"""nnx.shard_map without graph updates (graph=False / graph_updates=False):
plain PartitionSpecs for whole arguments, Variable values flow back,
StateSharding and returned input Variables are errors; graph mode with
updates returns input Modules as themselves."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((8,), ('d',), axis_types=(jax.sharding.AxisType.Auto,))


class W(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(16.0).reshape(8, 2))
    self.c = nnx.BatchStat(jnp.zeros((8,)))


def f(m, x):
  m.c[...] += 1.0
  return jax.lax.psum(m.w[...] * x, 'd')


x = jnp.arange(8.0).reshape(8, 1)
for label, kw in [
  ('tree', dict(graph=False)),
  ('no-updates', dict(graph_updates=False)),
  ('updates', dict()),
]:
  m = W()
  y = nnx.shard_map(
    f, mesh=mesh, in_specs=(P('d'), P('d')), out_specs=P(), **kw
  )(m, x)
  report.array(f'{label}-y', y)
  report.array(f'{label}-count', m.c[...])
  new = nnx.shard_map(
    lambda m: W(), mesh=mesh, in_specs=(P('d'),), out_specs=P(), **kw
  )(m)
  report.tree(f'{label}-new-module', nnx.state(new))
  if label != 'updates':
    with report.raises(f'{label}-return-input'):
      nnx.shard_map(
        lambda m: m, mesh=mesh, in_specs=(P('d'),), out_specs=P('d'), **kw
      )(m)
    with report.raises(f'{label}-state-sharding'):
      nnx.shard_map(
        lambda m: m.w[...].sum(),
        mesh=mesh,
        in_specs=(nnx.StateSharding({nnx.Param: P('d'), ...: P()}),),
        out_specs=P(),
        **kw,
      )(m)

m = W()
same = nnx.shard_map(
  lambda m: m, mesh=mesh, in_specs=(P('d'),), out_specs=P('d')
)(m)
report.value('updates-return-input-is-input', same is m)
