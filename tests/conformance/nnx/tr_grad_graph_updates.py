"""nnx.grad / value_and_grad with graph_updates on and off (graph mode)."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0, 3.0]))
    self.n = nnx.BatchStat(jnp.array(0.0))


def loss(m, x):
  m.n[...] += 1.0
  return jnp.sum(m.w[...] ** 2 * x)


x = jnp.array([1.0, 0.5, 0.25])
for gu in (True, False):
  m = M()
  g = nnx.grad(loss, graph_updates=gu)(m, x)
  report.tree(f'grad-{gu}', g)
  report.array(f'n-{gu}', m.n[...])
  m = M()
  v, g = nnx.value_and_grad(loss, argnums=(0, 1), graph_updates=gu)(m, x)
  report.array(f'vg-v-{gu}', v)
  report.tree(f'vg-g-{gu}', g)
  report.array(f'vg-n-{gu}', m.n[...])
