"""to_flat_state / from_flat_state and the FlatState API (constructor with
sort, indexing, slicing, merge, from_sorted_keys_values, split/filter)."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))
    self.layers = nnx.List([nnx.Param(jnp.full((1,), 2.0))])


state = nnx.state(M())
fs = nnx.to_flat_state(state)
report.value('type', type(fs).__name__)
report.value('paths', [list(map(str, p)) for p in fs.paths])
report.value('containers', [type(fs.paths).__name__, type(fs.leaves).__name__])
report.value('first', [list(fs[0][0]), type(fs[0][1]).__name__])
report.value('slice', [list(map(str, p)) for p in fs[1:].paths])
report.tree('back', nnx.from_flat_state(fs))
report.tree('from-pairs', nnx.from_flat_state([(('a', 0), 1.0)]))
a, b, c = nnx.Param(1.0), nnx.BatchStat(2.0), nnx.Param(3.0)
s1 = nnx.FlatState([(('b',), b), (('a', 'x'), a)], sort=True)
s2 = nnx.FlatState([(('b',), b), (('a', 'x'), a)], sort=False)
report.value('sorted', [list(p) for p in s1.paths])
report.value('unsorted', [list(p) for p in s2.paths])
s3 = nnx.FlatState.from_sorted_keys_values((('a',), ('c',)), [a, c])
merged = nnx.FlatState.merge(s1, s3)
report.value('merged', [list(p) for p in merged.paths])
report.value('filter', [list(p) for p in s1.filter(nnx.Param).paths])
report.value(
  'split', [[list(p) for p in x.paths] for x in s1.split(nnx.Param, ...)]
)
with report.raises('str-index'):
  s1['a']
with report.raises('sort-required'):
  nnx.FlatState([(('a',), a)])
