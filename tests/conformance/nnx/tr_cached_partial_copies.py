"""nnx.cached_partial binds copies of its graph nodes (sharing their
Variables) taken when it is made; structure changes inside are refused."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.z = nnx.Param(jnp.arange(3.0))
    self.a = nnx.BatchStat(jnp.array(0))


seen = []


@nnx.jit
def step(bound, passed, x):
  seen.append([bound is passed, bound.z is passed.z, list(vars(bound))[-2:]])
  bound.a[...] += 1
  bound.z[...] = bound.z[...] + x
  return bound


m = M()
g = nnx.compat.cached_partial(step, m)
first = g(m, 1.0)
second = g(m, 2.0)
report.value('identity', [first is m, second is first, first.z is m.z])
report.value('seen', seen)
report.tree('state', nnx.state(m))
report.value('order', [list(vars(m))[-2:], list(vars(first))[-2:]])

m.z = nnx.Param(jnp.zeros(3))
first.extra = nnx.Param(jnp.ones(1))
third = g(m, 1.0)
report.value('later', [third is first, hasattr(third, 'extra'), third.z is m.z])
report.tree('later-state', nnx.state(third))


@nnx.jit
def add(bound):
  bound.new = nnx.Param(jnp.ones(1))


@nnx.jit
def replace(bound):
  bound.z = nnx.Param(jnp.zeros(3))


with report.raises('add-inside'):
  nnx.compat.cached_partial(add, M())()
with report.raises('replace-inside'):
  nnx.compat.cached_partial(replace, M())()
for kw in ({'graph': False}, {'graph_updates': False}):
  with report.raises(f'tree-mode-{list(kw)[0]}'):
    nnx.cached_partial(step, M(), **kw)
