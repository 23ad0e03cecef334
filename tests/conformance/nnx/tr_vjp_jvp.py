"""nnx.vjp and nnx.jvp on modules, graph and tree mode; graph updates refused."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
x = jnp.arange(6.0).reshape(2, 3) / 6


def f(m, x):
  return jnp.tanh(m(x))


for graph in (True, False):
  y, vjp_fn = nnx.vjp(f, m, x, graph=graph, graph_updates=False)
  report.array(f'vjp-y-{graph}', y)
  gm, gx = vjp_fn(jnp.ones_like(y))
  report.tree(f'vjp-gm-{graph}', gm)
  report.array(f'vjp-gx-{graph}', gx)

  tm = jax.tree.map(jnp.ones_like, m) if not graph else None
  if graph:
    tm = nnx.clone(m)
    nnx.update(tm, jax.tree.map(jnp.ones_like, nnx.state(m)))
  y2, t2 = nnx.jvp(
    f, (m, x), (tm, jnp.zeros_like(x)), graph=graph, graph_updates=False
  )
  report.array(f'jvp-y-{graph}', y2)
  report.array(f'jvp-t-{graph}', t2)


def f_aux(m, x):
  y = m(x)
  return y.sum(), y.shape


y, vjp_fn, aux = nnx.vjp(f_aux, m, x, has_aux=True, graph=False)
report.array('vjp-aux-y', y)
report.value('vjp-aux', list(aux))
report.array('vjp-aux-gx', vjp_fn(jnp.ones(()))[1])
