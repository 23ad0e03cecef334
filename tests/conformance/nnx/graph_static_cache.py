"""static_cache / StaticCache / IndexesPytreeDef: the cache is consumed by
the next update context, splits in it use the cached structure, an
unconsumed cache is a ValueError."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import graph


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))


m = M()
report.value('fields', list(graph.StaticCache._fields))
report.value('ip-fields', list(graph.IndexesPytreeDef._fields))
ref_index = graph.RefMap()
graphdef, flat = graph.flatten(m, ref_index=ref_index)
entry = graph.StaticCache.create(
  graphdef, flat.paths, list(flat.leaves), ref_index
)
report.value(
  'entry',
  [
    entry.graphdef == graphdef,
    entry.final_graphdef == graphdef,
    entry.final_graphdef.nodes[0].outer_index,
    [
      n.outer_index
      for n in entry.final_graphdef.nodes
      if isinstance(n, graph.VariableDef)
    ],
    list(entry.paths),
    type(entry.new_index_ref).__name__,
    entry.new_index_ref[0] is m,
  ],
)
cache = {}
with graph.static_cache(cache):
  with nnx.update_context('t') as ctx:
    report.value('consumed', ctx.static_cache is cache)
with report.raises('not-consumed'):
  with graph.static_cache(cache):
    pass
cache = {m: entry}
m.w[...] = jnp.full(2, 5.0)
with graph.static_cache(cache):
  with nnx.update_context('t'):
    with nnx.split_context('t') as sctx:
      g, s = sctx.split(m)
report.value('cached-split', [g == graphdef, s['w'] is m.w])
report.tree('cached-state', s)
d = graph.IndexesPytreeDef(
  graph.HashableMapping({'a': 0}), jax.tree.structure([1])
)
report.value('ip', [repr(d), len(jax.tree.leaves(d))])
