"""Keyword arguments of lifted vmap, pmap and scan: mapped over axis 0
without graph updates (as jax.vmap), resolved to positions in graph mode
(an error where they cannot be), refused by graph-mode pmap and by scan
without graph updates."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


def add(x, y):
  return x + y


def add_kwonly(x, *, y):
  return x + y


def step(c, x):
  return c + x, x


for mode, g in [
  ('no-updates', dict(graph=True, graph_updates=False)),
  ('tree', dict(graph=False)),
  ('graph', dict(graph=True)),
]:
  calls = {
    'vmap': lambda: nnx.vmap(add, **g)(jnp.ones(2), y=jnp.arange(2.0)),
    'vmap-kwonly': lambda: nnx.vmap(add_kwonly, **g)(
      jnp.ones(2), y=jnp.arange(2.0)
    ),
    'vmap-in-axes': lambda: nnx.vmap(add, in_axes=(0, None), **g)(
      jnp.ones(2), y=jnp.arange(3.0)
    ),
    'pmap': lambda: nnx.pmap(add, **g)(jnp.ones(1), y=jnp.arange(1.0)),
    'scan': lambda: nnx.scan(step, **g)(jnp.zeros(()), x=jnp.arange(3.0)),
  }
  for name, call in calls.items():
    with report.raises(f'{name}-{mode}'):
      report.tree(f'{name}-{mode}-out', jax.tree.map(jnp.asarray, call()))


class Counter(nnx.Module):
  def __init__(self):
    self.n = nnx.BatchStat(jnp.zeros(2))


def bump(x, *, m):
  m.n[...] = m.n[...] + x
  return x * 2


for mode, g in [
  ('no-updates', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  m = Counter()
  out = nnx.vmap(bump, **g)(jnp.ones(2), m=m)
  report.array(f'kw-module-{mode}-out', out)
  report.array(f'kw-module-{mode}-n', m.n[...])
