"""nnx.jit_partial, transform_metadata, pmap static arguments, StateAxes API."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((2, 3)))
    self.c = nnx.BatchStat(jnp.zeros(()))


m = M()


def f(m, x):
  m.c[...] += 1
  return m.w[...] * x


with report.raises('jit_partial graph_updates'):
  nnx.jit_partial(f, m)
g = nnx.jit_partial(f, m, graph_updates=False)
report.array('jp-1', g(2.0))
report.array('jp-2', g(3.0))
report.array('jp-c', m.c[...])


y = nnx.pmap(lambda x, n: x * n, static_broadcasted_argnums=1)(
  jnp.arange(2.0), 3
)
report.array('pmap-static', y)

sa = nnx.StateAxes({nnx.Param: 0, ...: None})
report.value('sa-len', len(sa))
report.value('sa-getitem', sa[nnx.Param])
report.value(
  'sa-map-prefix', [sa.map_prefix(('w',), m.w), sa.map_prefix(('c',), m.c)]
)
with report.raises('no axis'):
  nnx.StateAxes({nnx.Param: 0}).map_prefix(('c',), m.c)
ss = nnx.StateSharding({nnx.Param: 'x', ...: None})
report.value('ss-shardings', list(ss.shardings))
report.text('ss-repr', repr(ss))
report.value('diffstate', [nnx.DiffState(0, nnx.Param).map_prefix(('w',), m.w)])

nnx.use_eager_sharding(False)


class S(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((3, 2)), out_sharding=('layers', 'model'))


s = S()
inside = []


@nnx.transform_metadata(in_axes=1, out_axes=1, partition='model')
def tm(s):
  inside.append(list(s.w.get_metadata()['out_sharding']))
  return 3


report.value('tm-out', tm(s))
report.value('tm-inside', inside)
report.value('tm-after', list(s.w.get_metadata()['out_sharding']))
