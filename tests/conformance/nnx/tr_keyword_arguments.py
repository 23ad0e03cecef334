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


class W(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(3.0))


def loss(m, x, scale=1.0):
  return jnp.sum(m.w[...] * x) * scale


def loss_kwonly(m, x, *, scale=1.0):
  return jnp.sum(m.w[...] * x) * scale


for mode, g in [
  ('no-updates', dict(graph=True, graph_updates=False)),
  ('tree', dict(graph=False)),
  ('graph', dict(graph=True)),
]:
  for fname, f in [('plain', loss), ('kwonly', loss_kwonly)]:
    calls = {
      'grad-kw': lambda: nnx.state(
        nnx.grad(f, **g)(W(), jnp.ones(3), scale=2.0)
      ),
      'grad-nokw': lambda: nnx.state(nnx.grad(f, **g)(W(), jnp.ones(3))),
      'value-and-grad-kw': lambda: nnx.value_and_grad(f, **g)(
        W(), jnp.ones(3), scale=2.0
      )[0],
      'remat-kw': lambda: nnx.remat(f, **g)(W(), jnp.ones(3), scale=2.0),
      'remat-nokw': lambda: nnx.remat(f, **g)(W(), jnp.ones(3)),
    }
    for name, call in calls.items():
      label = f'{name}-{fname}-{mode}'
      with report.raises(label):
        report.tree(label + '-out', call())
  with report.raises(f'grad-x-by-keyword-{mode}'):
    report.array(
      f'grad-x-by-keyword-{mode}-out',
      nnx.grad(loss, argnums=1, **g)(W(), x=jnp.ones(3)),
    )

# functions taking *args / **kwargs in graph mode
report.array(
  'vmap-varargs', nnx.vmap(lambda *xs: xs[0] + xs[1])(jnp.ones(2), jnp.ones(2))
)
report.array('vmap-varkw', nnx.vmap(lambda x, **kw: x)(jnp.ones(2)))
report.array('grad-varargs', nnx.grad(lambda *xs: jnp.sum(xs[0]))(jnp.ones(2)))
report.tree(
  'scan-varargs',
  nnx.scan(lambda *a: (a[0] + a[1], a[1]))(jnp.zeros(()), jnp.ones(2)),
)
