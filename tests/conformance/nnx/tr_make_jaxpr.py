"""nnx.make_jaxpr of module functions: out shapes and primitives."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
x = jnp.ones((4, 3))


def prims(jaxpr):
  return sorted({str(e.primitive) for e in jaxpr.jaxpr.eqns})


for graph in (True, False):
  out = nnx.make_jaxpr(lambda m, x: m(x), graph=graph, graph_updates=False)(
    m, x
  )
  if isinstance(out, tuple):
    report.value(f'tuple-{graph}', len(out))
    jaxpr = out[0]
  else:
    jaxpr = out
  report.text(f'type-{graph}', type(jaxpr).__name__)
  report.value(f'prims-{graph}', prims(jaxpr))
  report.value(f'n-invars-{graph}', len(jaxpr.jaxpr.invars))
  report.value(
    f'outs-{graph}', [list(v.aval.shape) for v in jaxpr.jaxpr.outvars]
  )


def mutate(m, x):
  m.bias[...] += 1.0
  return x.sum()


out = nnx.make_jaxpr(mutate, graph_updates=False)(m, x)
jaxpr = out[0] if isinstance(out, tuple) else out
report.value('mutate-prims', prims(jaxpr))
report.array('bias-unchanged', m.bias[...])
out = nnx.make_jaxpr(
  lambda x, n: x * n, static_argnums=(1,), graph_updates=False
)(x, 3)
jaxpr = out[0] if isinstance(out, tuple) else out
report.value('static-prims', prims(jaxpr))
report.value('static-invars', len(jaxpr.jaxpr.invars))
report.value('jax-vs-nnx', prims(jax.make_jaxpr(lambda x: x * 3)(x)))

with report.raises('graph-updates-refused'):
  nnx.make_jaxpr(lambda m, x: m(x), graph=True, graph_updates=True)(m, x)
