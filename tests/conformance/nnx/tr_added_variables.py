"""A function that adds a Variable to an input inside a transform without
graph updates: the input Variables get their own new values, the new one
stays inside; a Variable as the root of split / merge / to_tree."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.b = nnx.Param(jnp.ones(3))
    self.c = nnx.Param(jnp.zeros(3))


def grow(m, x=None):
  m.a = nnx.Param(jnp.full(3, 7.0))
  m.b[...] = m.b[...] + 1
  m.c[...] = m.c[...] + 2
  return jnp.sum(m.b[...])


def step(m, x):
  grow(m)
  return x


for mode, g in [
  ('tree', dict(graph=False)),
  ('no-updates', dict(graph=True, graph_updates=False)),
]:
  calls = {
    'jit': lambda m: nnx.jit(grow, **g)(m),
    'vmap': lambda m: nnx.vmap(grow, in_axes=(None, 0), **g)(m, jnp.ones(2)),
    'grad': lambda m: nnx.grad(grow, **g)(m),
    'cond': lambda m: nnx.cond(True, grow, grow, m, **g),
    'switch': lambda m: nnx.switch(1, [grow, grow], m, **g),
    'checkify': lambda m: nnx.checkify(grow, **g)(m)[1],
    'remat': lambda m: nnx.remat(grow, **g)(m),
    'eval_shape': lambda m: nnx.eval_shape(grow, m, **g),
    'scan-broadcast': lambda m: nnx.scan(step, in_axes=(None, 0), **g)(
      m, jnp.arange(2.0)
    ),
  }
  for name, call in calls.items():
    m = M()
    with report.raises(f'{name}-{mode}'):
      call(m)
      report.tree(f'{name}-{mode}-b', m.b[...])
      report.tree(f'{name}-{mode}-c', m.c[...])
      report.value(f'{name}-{mode}-has-a', hasattr(m, 'a'))

v = nnx.Param(jnp.arange(3.0))
graphdef, state = nnx.split(v)
report.value('split-is-variable', state is v)
report.value('merge-is-variable', nnx.merge(graphdef, state) is v)
_, stats, rest = nnx.split(v, nnx.BatchStat, ...)
report.value('split-filters', [type(stats).__name__, len(stats), rest is v])
nnx.update(v, nnx.Param(jnp.zeros(3)))
report.tree('update-variable', v[...])
back = nnx.from_tree(nnx.to_tree(v))
report.value('to-tree-roundtrip', [type(back).__name__, back is v])
report.tree('to-tree-value', back[...])
report.value(
  'to-tree-leaves', jax.tree_util.tree_structure(nnx.to_tree(v)).num_leaves
)
