"""nnx.vjp / nnx.jvp refuse graph mode with graph updates (the default);
without graph updates they work on Modules, with Module cotangents."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
x = jnp.ones((2, 3))
with report.raises('vjp-graph-updates'):
  nnx.vjp(lambda m, x: m(x), m, x, graph=True, graph_updates=True)
with report.raises('vjp-default'):
  nnx.vjp(lambda m, x: m(x), m, x)
with report.raises('jvp-default'):
  nnx.jvp(lambda m, x: m(x), (m, x), (m, x))

for label, kw in [
  ('tree', dict(graph=False)),
  ('no-updates', dict(graph_updates=False)),
]:
  out, vjp_fn = nnx.vjp(lambda m, x: m(x), m, x, **kw)
  report.array(f'{label}-out', out)
  ct_m, ct_x = vjp_fn(jnp.ones((2, 2)))
  report.text(f'{label}-ct-type', type(ct_m).__name__)
  report.tree(f'{label}-ct-m', nnx.state(ct_m))
  report.array(f'{label}-ct-x', ct_x)
  tangent = jax.tree.map(jnp.ones_like, m)
  y, t = nnx.jvp(lambda m, x: m(x), (m, x), (tangent, x), **kw)
  report.array(f'{label}-jvp-y', y)
  report.array(f'{label}-jvp-t', t)


class Counter(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.n = nnx.BatchStat(jnp.array(0.0))


def f(c):
  c.n[...] += 1.0
  return jnp.sum(c.w[...] ** 2), c.n[...]


c = Counter()
out, vjp_fn, aux = nnx.vjp(f, c, has_aux=True, graph=False)
report.array('aux', aux)
report.array('count-after-vjp', c.n[...])
(ct,) = vjp_fn(jnp.array(1.0))
report.array('ct-w', ct.w[...])
