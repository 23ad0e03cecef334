"""nnx.List and nnx.Dict: paths, state keys, mutation and reprs."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

xs = nnx.List([1, jnp.ones(2), nnx.Param(jnp.ones(3))])
report.value(
  'list-paths',
  [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(xs)],
)
report.value('list-state-keys', sorted(nnx.state(xs).keys()))
xs.append(jnp.zeros(1))
report.value('len', len(xs))
report.array('last', xs[-1])
report.value('slice-type', type(xs[1:3]).__name__)
with report.printed('list-repr'):
  print(nnx.List([1, jnp.ones(2)]))

d = nnx.Dict(a=1, b=jnp.ones(1), c=nnx.Param(jnp.zeros(2)))
report.value('dict-keys', list(d))
report.value('dict-attr', d.a)
report.value(
  'dict-paths',
  [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(d)],
)
with report.raises('dict-missing-key'):
  d['zz']
with report.raises('dict-int-key'):
  nnx.Dict({1: 2})
with report.printed('dict-repr'):
  print(nnx.Dict(a=nnx.List([1])))
with report.printed('empty'):
  print(nnx.List(), nnx.Dict())


class M(nnx.Module):
  def __init__(self):
    self.layers = nnx.List([nnx.Param(jnp.ones(1)), nnx.Param(jnp.ones(2))])
    self.d = nnx.Dict({'x': nnx.Param(jnp.ones(1))})


report.tree('module-state', nnx.state(M()))
