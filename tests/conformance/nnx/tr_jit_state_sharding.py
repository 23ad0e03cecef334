"""nnx.jit in_shardings: StateSharding entries per Variable (graph mode)
and entries covering only the non-static positional arguments."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

mesh = jax.make_mesh((8,), ('d',))
row = jax.NamedSharding(mesh, jax.P('d'))


def fn(x, scale, relu):
  return jnp.maximum(x * scale, 0).sum() if relu else (x * scale).sum()


f = nnx.jit(fn, in_shardings=(row, None), static_argnums=(2,))
report.value('static last, relu', float(f(jnp.ones((8, 2)), 0.5, True)))
report.value('static last, no relu', float(f(-jnp.ones((8, 2)), 0.5, False)))


def fn2(relu, x):
  return jnp.maximum(x, 0).sum() if relu else x.sum()


f2 = nnx.jit(fn2, in_shardings=(row,), static_argnums=(0,))
report.value('static first', float(f2(True, -jnp.ones((8, 2)))))

m = nnx.Linear(4, 8, rngs=nnx.Rngs(0))
ss = nnx.StateSharding(
  {
    nnx.PathContains('kernel'): jax.NamedSharding(mesh, jax.P(None, 'd')),
    ...: jax.NamedSharding(mesh, jax.P()),
  }
)
g = nnx.jit(lambda m: m.kernel[...] * 1, in_shardings=(ss,))
out = g(m)
report.value('output spec', str(out.sharding.spec))
report.array('output', out)


@nnx.jit(in_shardings=(ss, None))
def step(m, x):
  m.bias[...] += 1.0
  return m(x)


y = step(m, jnp.ones((2, 4)))
report.array('step out', y)
report.array('bias after', m.bias[...])
