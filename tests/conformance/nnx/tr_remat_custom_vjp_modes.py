"""nnx.remat in every mode (values, Variable updates, structure changes,
returned inputs) and the nnx.custom_vjp wrapper class of each mode, with
keyword arguments."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.n = nnx.BatchStat(jnp.array(0.0))


def f(m, x, k):
  m.n[...] += 1.0
  return jnp.sum(jnp.sin(m.w[...] * x)) * k


def add(m):
  m.z = nnx.Param(jnp.ones(1))
  return m.w[...]


for label, kw in [
  ('updates', dict()),
  ('tree', dict(graph=False)),
  ('no-updates', dict(graph_updates=False)),
]:
  m = M()
  r = nnx.remat(f, static_argnums=2, **kw)
  report.array(f'{label}-y', r(m, 2.0, 3))
  report.array(f'{label}-count', m.n[...])
  gkw = {} if not kw else dict(graph=False)
  g = nnx.grad(lambda m: r(m, 2.0, 3), **gkw)(m)
  report.array(f'{label}-grad-w', g['w'][...] if not kw else g.w[...])
  m = M()
  nnx.remat(add, **kw)(m)
  report.value(f'{label}-added', hasattr(m, 'z'))
  if kw:
    with report.raises(f'{label}-return-input'):
      nnx.remat(lambda m: m, **kw)(M())

  @nnx.custom_vjp(**kw)
  def h(x, k=2.0):
    return x * k

  if kw:
    h.defvjp(lambda x, k: (x * k, None), lambda res, g: (g * 10, 0.0))
  else:
    h.defvjp(lambda x, k: (x * k, None), lambda res, g: (g[1] * 10, 0.0))
  report.text(f'{label}-custom-vjp-class', type(h).__name__)
  report.array(f'{label}-custom-vjp-kw', h(2.0, k=4.0))
  report.array(f'{label}-custom-vjp-grad', jax.grad(lambda x: h(x, k=3.0))(1.0))
