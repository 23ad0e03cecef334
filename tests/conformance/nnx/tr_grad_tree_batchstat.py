"""nnx.grad without graph updates differentiates every array of the
arguments (BatchStat and plain array attributes too); shared Variables
are one leaf in graph mode and an error in tree mode."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.lin = nnx.Linear(3, 2, rngs=nnx.Rngs(1))
    self.stat = nnx.BatchStat(jnp.ones(2))


x = jnp.linspace(-1.0, 1.0, 6).reshape(2, 3)


def loss(m, x):
  return jnp.sum(m.lin(x) * m.stat[...][None]) ** 2


report.tree('grad-tree', nnx.state(nnx.grad(loss, graph=False)(M(), x)))
v, g = nnx.value_and_grad(loss, argnums=(0, 1), graph=False)(M(), x)
report.array('vg-value', v)
report.tree('vg-tree-module', nnx.state(g[0]))
report.array('vg-tree-x', g[1])
g = nnx.grad(loss, graph_updates=False)(M(), x)
report.tree('grad-no-updates', nnx.state(g))


class Counted(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.arr = jnp.array([3.0, 4.0])
    self.count = nnx.Variable(jnp.array(1))


def counted_loss(m, x):
  m.count[...] += 1
  return jnp.sum(m.w[...] * m.arr * x)


m = Counted()
with report.raises('int-variable-needs-allow-int'):
  nnx.grad(counted_loss, graph=False)(m, 2.0)
g = nnx.grad(counted_loss, argnums=(0, 1), allow_int=True, graph=False)(m, 2.0)
report.array('allow-int-w', g[0].w[...])
report.array('allow-int-arr', g[0].arr)
report.array('allow-int-x', g[1])
report.array('count-updated', m.count[...])
with report.raises('tree-diffstate'):
  nnx.grad(counted_loss, argnums=nnx.DiffState(0, nnx.Param), graph=False)(
    m, 2.0
  )


class Shared(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.s = self.w


def shared_loss(m):
  return jnp.sum(m.w[...] * m.s[...])


g = nnx.grad(shared_loss, graph_updates=False)(Shared())
report.array('shared-w', g.w[...])
report.value('shared-kept', g.w is g.s)
with report.raises('tree-shared'):
  nnx.grad(shared_loss, graph=False)(Shared())
