"""to_pure_dict / replace_by_pure_dict / restore_int_paths on a model with
an nnx.List (integer keys), with extract_fn and replace_fn."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))
    self.layers = nnx.List([nnx.Param(jnp.full((1,), 2.0))])


state = nnx.state(M())
pure = nnx.to_pure_dict(state)
report.tree('pure', pure)
report.value('pure-keys', [str(k) for k in pure['layers']])
nnx.replace_by_pure_dict(state, jax.tree.map(lambda x: x + 10, pure))
report.tree('replaced', nnx.to_pure_dict(state))
report.value(
  'restored',
  str(nnx.restore_int_paths({'layers': {'0': 1}, 'x': {'1': {'2': 3}}})),
)
s = nnx.State({'a': nnx.Param(1), 'l': {0: nnx.Param(2)}})
nnx.replace_by_pure_dict(s, {'a': 5, 'l': {'0': 7}})
report.value('string-int-keys', str(nnx.to_pure_dict(s)))
s.replace_by_pure_dict({'a': 4}, replace_fn=lambda v, x: v.replace(x * 2))
report.value('replace-fn', [type(s['a']).__name__, s['a'].get_value()])
report.text(
  'extract-fn',
  repr(nnx.to_pure_dict(nnx.State({'a': nnx.Param(1), 'b': 3}), lambda v: 0)),
)
with report.raises('unknown-key'):
  nnx.replace_by_pure_dict(s, {'zz': 1})
