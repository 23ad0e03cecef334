"""split_state / merge_state / filter_state / map_state / State.map,
State construction and statelib.diff / create_path_filters."""

import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx import statelib


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))
    self.c = nnx.Param(jnp.zeros(3))


state = nnx.state(M())
params, rest = nnx.split_state(state, nnx.Param, ...)
report.tree('params', params)
report.tree('rest', rest)
report.tree('merged', nnx.merge_state(params, rest))
report.text(
  'merge-dicts', repr(nnx.merge_state({'a': 1}, {'b': {'c': 2}}, {'a': 5}))
)
report.tree('filtered', nnx.filter_state(state, nnx.BatchStat))
report.text(
  'map-state', repr(nnx.map_state(lambda p, v: (p, type(v).__name__), state))
)
report.tree('state-map', state.map(lambda p, v: v.replace(v[...] + len(p))))
report.text('from-pairs', repr(nnx.State(iter([('a', 1), ('b', {'c': 2})]))))
with report.raises('no-mapping'):
  nnx.State()
with report.raises('non-exhaustive'):
  nnx.split_state(state, nnx.Param)
s1 = nnx.State({'a': {'x': 1, 'y': 2}, 'b': 3})
report.text('diff', repr(statelib.diff(s1, nnx.State({'a': {'x': 5}}))))
filters = statelib.create_path_filters(nnx.State({'a': {'x': 1}, 'c': 4}))
report.text('path-filters', repr(filters))
report.text(
  'nested-repr', repr(statelib.NestedStateRepr(nnx.State({'a': {'b': 1}})))
)
