"""nnx.cond / switch / while_loop / fori_loop in graph and tree mode."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.n = nnx.BatchStat(jnp.array(0))


def inc(m, x):
  m.n[...] += 1
  return m.w[...] * x


def dec(m, x):
  m.n[...] -= 1
  return m.w[...] - x


def mid(m, x):
  return m.w[...] + x


for graph in (True, False):
  m = M()
  ys = [nnx.cond(p, inc, dec, m, 3.0, graph=graph) for p in (True, True, False)]
  report.array(f'cond-{graph}', jnp.stack(ys))
  report.array(f'cond-n-{graph}', m.n[...])
  m = M()
  ys = [
    nnx.switch(i, (inc, dec, mid), m, 3.0, graph=graph) for i in (0, 2, 5, -1)
  ]
  report.array(f'switch-{graph}', jnp.stack(ys))
  report.array(f'switch-n-{graph}', m.n[...])

  def fbody(i, carry):
    m, s = carry
    m.n[...] += i
    return m, s + m.w[...] * i

  m = M()
  out_m, s = nnx.fori_loop(0, 5, fbody, (m, jnp.zeros(2)), graph=graph)
  report.array(f'fori-s-{graph}', s)
  report.array(f'fori-n-{graph}', m.n[...])
  report.value(f'fori-same-{graph}', out_m is m)

  def wcond(c):
    m, k = c
    return k < 4

  def wbody(c):
    m, k = c
    m.w[...] = m.w[...] * 2
    return m, k + 1

  m = M()
  out_m, k = nnx.while_loop(wcond, wbody, (m, 0), graph=graph)
  report.array(f'while-w-{graph}', m.w[...])
  report.array(f'while-k-{graph}', k)

m = M()
out = nnx.fori_loop(0, 3, fbody, (m, jnp.zeros(2)), unroll=True)
report.array('fori-unroll', out[1])
