"""nnx.prefix in tree mode returns a prefix shaped like the graph node (a
copy whose attributes hold the prefixes), accepted by the tree-mode
transforms; a graph-mode prefix (TreeState) is refused in tree mode and a
node-shaped one in graph mode."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


class M(nnx.Module):
  def __init__(self, n=4):
    self.w = nnx.Param(jnp.arange(2.0 * n).reshape(n, 2))
    self.b = nnx.Param(jnp.ones(2))
    self.k = 3

  def __call__(self, x):
    return x * self.w + self.b


class Outer(nnx.Module):
  def __init__(self):
    self.inner = M()
    self.lst = nnx.List([nnx.BatchStat(jnp.zeros(1)), 5])
    self.c = nnx.Variable(jnp.zeros(3))
    self.arr = jnp.ones(2)


W_AXIS = {nnx.PathContains('w'): 0, ...: None}
m = M()
p = nnx.prefix(m, W_AXIS, graph=False)
report.value('type', type(p).__name__)
report.value('attributes', [p.w, p.b, p.k])
report.text('repr', repr(p))
report.value('node untouched', type(m.w).__name__)
report.value(
  'leaves', jax.tree_util.tree_leaves(p, is_leaf=lambda x: x is None)
)
report.text(
  'nested repr',
  repr(nnx.prefix([Outer(), jnp.ones(3)], lambda path, x: path, graph=False)),
)
report.value(
  'variable root', nnx.prefix(nnx.Param(jnp.ones(2)), {...: 0}, graph=False)
)
g = nnx.prefix(m, W_AXIS, graph=True)
report.value('graph type', type(g).__name__)
with report.raises('graph prefix attribute'):
  g.w

kw = dict(graph=False)
y = nnx.vmap(lambda m, x: m(x), in_axes=(p, 0), **kw)(m, jnp.ones((4, 2)))
report.array('vmap', y)
f = nnx.scan(
  lambda c, m: (c + m.w[...] * m.b[...], c.sum()),
  in_axes=(nnx.Carry, p),
  out_axes=(nnx.Carry, 0),
  **kw,
)
c, ys = f(jnp.zeros(2), m)
report.array('scan carry', c)
report.array('scan ys', ys)
m8 = M(8)
p8 = nnx.prefix(m8, W_AXIS, graph=False)
h = nnx.pmap(lambda m, x: m.w[...] * x + m.b[...], in_axes=(p8, 0), **kw)
report.array('pmap', h(m8, jnp.ones((8, 2))))
mesh = jax.make_mesh((8,), ('d',))
sh = nnx.prefix(M(), {...: NamedSharding(mesh, P())}, graph=False)
out = nnx.jit(M, out_shardings=sh, **kw)()
report.value('jit out_shardings spec', str(out.w.sharding.spec))
sp = nnx.prefix(m8, {...: P()}, graph=False)
sm = nnx.shard_map(
  lambda m, x: x + m.b[...].sum() + m.w[...].sum(),
  mesh=mesh,
  in_specs=(sp, P('d')),
  out_specs=P('d'),
  **kw,
)
report.array(
  'shard_map', sm(m8, jax.device_put(jnp.zeros(8), NamedSharding(mesh, P('d'))))
)

for mode, kw in [
  ('graph', dict(graph=True)),
  ('gu=False', dict(graph=True, graph_updates=False)),
]:
  with report.raises(f'node-shaped prefix vmap {mode}'):
    nnx.vmap(lambda m, x: x, in_axes=(p, 0), **kw)
  with report.raises(f'node-shaped prefix scan {mode}'):
    nnx.scan(lambda c, m: (c, 0), in_axes=(nnx.Carry, p), **kw)
  with report.raises(f'node-shaped prefix jit {mode}'):
    nnx.jit(M, out_shardings=sh, **kw)
with report.raises('graph prefix vmap tree'):
  nnx.vmap(lambda m, x: x, in_axes=(g, 0), graph=False)
with report.raises('graph prefix scan tree'):
  nnx.scan(lambda c, m: (c, 0), in_axes=(nnx.Carry, g), graph=False)
with report.raises('graph prefix shard_map tree'):
  nnx.shard_map(
    lambda m: 0, mesh=mesh, in_specs=(g,), out_specs=P(), graph=False
  )
