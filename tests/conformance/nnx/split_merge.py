"""nnx.split / merge / state / update trees for a nested module."""

import jax.numpy as jnp
import report
from flax import nnx


class Block(nnx.Module):
  def __init__(self, rngs):
    self.linear = nnx.Linear(2, 3, rngs=rngs)
    self.bn = nnx.BatchNorm(3, rngs=rngs)
    self.count = nnx.Variable(jnp.array(0))

  def __call__(self, x):
    self.count[...] += 1
    return self.bn(self.linear(x))


model = Block(nnx.Rngs(0))
graphdef, params, rest = nnx.split(model, nnx.Param, ...)
report.tree('params', params)
report.tree('rest', rest)
state = nnx.state(model)
report.tree('state', state)
report.tree('batch-stats', nnx.state(model, nnx.BatchStat))
merged = nnx.merge(graphdef, params, rest)
report.array('merged-call', merged(jnp.ones((1, 2))))
report.tree('after-call', nnx.state(merged, nnx.Variable))
nnx.update(model, nnx.state(merged))
report.array('updated-count', model.count[...])
report.value('pure-dict-keys', sorted(nnx.to_pure_dict(params)))
report.tree('pure-dict', nnx.to_pure_dict(params))
