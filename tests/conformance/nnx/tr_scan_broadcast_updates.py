"""nnx.scan with a broadcast module whose Variable the step updates: graph
mode drops the updates (each step sees the original value), pytree mode
(graph_updates=False) carries them to the next step and back."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3))
    self.n = nnx.BatchStat(jnp.zeros(()))


def step(c, m, x):
  m.n[...] += x
  return c + m.w[...].sum() * x, m.n[...]


for gu in (True, False):
  m = M()
  c, ys = nnx.scan(
    step,
    in_axes=(nnx.Carry, None, 0),
    out_axes=(nnx.Carry, 0),
    graph_updates=gu,
  )(jnp.zeros(()), m, jnp.arange(3.0))
  report.array(f'carry-{gu}', c)
  report.array(f'ys-{gu}', ys)
  report.array(f'n-after-{gu}', m.n[...])

for gu in (True, False):
  ms = nnx.vmap(lambda x: M(), graph_updates=gu)(jnp.arange(4.0))

  def h(c, mm):
    mm.n[...] += c
    return c + 1, mm.w[...].sum()

  c, ys = nnx.scan(h, graph_updates=gu)(jnp.zeros(()), ms)
  report.array(f'scanned-n-{gu}', ms.n[...])
  report.array(f'scanned-ys-{gu}', ys)
