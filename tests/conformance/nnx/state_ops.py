"""State: filter, split_state, merge_state, flat_state, replace_by_pure_dict."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(2))
    self.sub = nnx.Linear(2, 2, rngs=nnx.Rngs(0))


state = nnx.state(M())
params, stats = nnx.split_state(state, nnx.Param, nnx.BatchStat)
report.tree('params', params)
report.tree('stats', stats)
report.tree('merged', nnx.merge_state(params, stats))
report.tree('filtered', nnx.filter_state(state, nnx.BatchStat))
flat = nnx.to_flat_state(state)
report.value('flat-paths', [list(map(str, p)) for p, _ in flat])
pure = nnx.to_pure_dict(state)
pure['a'] = jnp.full(2, 7.0)
nnx.replace_by_pure_dict(state, pure)
report.tree('replaced', state)
