"""nnx.jit without graph updates: Variable aliasing between inputs and
outputs is a ValueError; structure changes made inside are dropped while
Variable values flow back."""

import jax.numpy as jnp
import report
from flax import nnx


class Counter(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(3.0))
    self.count = nnx.BatchStat(jnp.array(0))


def returns_module(m):
  m.count[...] += 10
  return m


with report.raises('tree-return-input'):
  nnx.jit(returns_module, graph=False)(Counter())
with report.raises('no-updates-return-input'):
  nnx.jit(returns_module, graph_updates=False)(Counter())
with report.raises('tree-return-variable'):
  nnx.jit(lambda m: m.w, graph=False)(Counter())

m = Counter()
with report.raises('tree-duplicate-inputs'):
  nnx.jit(lambda a, b: a.w[...] + b.w[...], graph=False)(m, m)
report.array(
  'no-updates-duplicate-inputs',
  nnx.jit(lambda a, b: a.w[...] + b.w[...], graph_updates=False)(m, m),
)


def add_attr(m):
  m.b = nnx.Param(jnp.full((2,), 3.0))
  m.count[...] += 1
  return m.w[...]


def replace_attr(m):
  m.w = nnx.Param(jnp.zeros(3))
  return m.w[...]


for label, kw in [
  ('no-updates', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
  ('updates', dict()),
]:
  m = Counter()
  nnx.jit(add_attr, **kw)(m)
  report.value(f'{label}-added', hasattr(m, 'b'))
  report.array(f'{label}-count', m.count[...])
  m = Counter()
  report.array(f'{label}-replaced-out', nnx.jit(replace_attr, **kw)(m))
  report.array(f'{label}-replaced-w', m.w[...])
  fresh = nnx.jit(lambda m: Counter(), **kw)(m)
  report.tree(f'{label}-new-module', nnx.state(fresh))
