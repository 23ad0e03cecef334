"""nnx.custom_vjp: plain attribute updates in the primal reach the caller
(graph mode), and writes to non-differentiated Variables are kept
(graph_updates=False and tree mode)."""

import jax.numpy as jnp
import report
from flax import nnx


class Foo(nnx.Module):
  def __init__(self):
    self.x = nnx.Param(jnp.array(1.0))
    self.calls = nnx.BatchStat(jnp.array(0))
    self.n = 0


@nnx.custom_vjp
def f(m):
  m.calls[...] += 1
  m.n += 1
  return jnp.sin(m.x[...])


def f_fwd(m):
  return f(m), jnp.cos(m.x[...])


def f_bwd(res, g):
  (m_g,), out_g = g
  m_g['x'][...] = res * out_g
  return (m_g,)


f.defvjp(f_fwd, f_bwd)
m = Foo()
report.array('primal', f(m))
report.value('calls after primal', int(m.calls[...]))
report.value('n after primal', m.n)
g = nnx.grad(f)(m)
report.value('calls after grad', int(m.calls[...]))
report.value('n after grad', m.n)
report.array('dx', g['x'][...])
report.array('jit primal', nnx.jit(f)(m))
report.value('n after jit', m.n)

for name, kw in [
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  w = nnx.Param(jnp.array(2.0))
  st = nnx.BatchStat(jnp.array(0.0))

  @nnx.custom_vjp(nondiff_argnums=(1,), **kw)
  def h(w, st):
    st[...] = jnp.array(-1.0)
    return w[...] ** 2

  def h_fwd(w, st):
    return h(w, st), w[...]

  def h_bwd(st, res, g):
    return (2 * res * g,)

  h.defvjp(h_fwd, h_bwd)
  report.array(f'{name} y', h(w, st))
  report.array(f'{name} st after call', st[...])
