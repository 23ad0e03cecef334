"""nnx.grad / value_and_grad: graph and tree mode, argnums, DiffState, has_aux."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.lin = nnx.Linear(3, 2, rngs=nnx.Rngs(1))
    self.stat = nnx.BatchStat(jnp.ones(2))


class P(nnx.Module):
  def __init__(self):
    self.lin = nnx.Linear(3, 2, rngs=nnx.Rngs(1))
    self.stat = nnx.Param(jnp.ones(2))


x = jnp.linspace(-1.0, 1.0, 6).reshape(2, 3)


def loss(m, x):
  return jnp.sum(m.lin(x) * m.stat[...][None]) ** 2


for graph in (True, False):
  # tree mode differentiates every Variable: use Param-only state there
  m = M() if graph else P()
  g = nnx.grad(loss, graph=graph)(m, x)
  report.tree(f'grad-{graph}', g)
  v, g = nnx.value_and_grad(loss, argnums=(0, 1), graph=graph)(m, x)
  report.array(f'vg-value-{graph}', v)
  report.tree(f'vg-grads-{graph}', g)


m = M()
g = nnx.grad(loss, argnums=nnx.DiffState(0, nnx.BatchStat))(m, x)
report.tree('diffstate-batchstat', g)
g = nnx.grad(loss, argnums=nnx.DiffState(0, nnx.PathContains('kernel')))(m, x)
report.tree('diffstate-kernel', g)


def with_aux(m, x):
  y = m.lin(x)
  m.stat[...] += 1.0
  return jnp.mean(y), {'y': y}


for graph in (True, False):
  m = M()
  (v, aux), g = nnx.value_and_grad(with_aux, has_aux=True, graph=graph)(m, x)
  report.array(f'aux-v-{graph}', v)
  report.tree(f'aux-{graph}', aux)
  report.tree(f'aux-g-{graph}', g)
  report.array(f'aux-stat-{graph}', m.stat[...])
