"""nnx.jit in_shardings: the argument Variables handed back carry their
input shardings (all with graph updates, new ones included; only those set
inside without graph updates, the others keep their arrays)."""

import jax
import jax.numpy as jnp
import numpy as np
import report
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.sharding.Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ('a', 'b'))


def sh(*names):
  return NamedSharding(mesh, P(*names))


def spec(v):
  s = v.get_value().sharding
  return str(s.spec) if hasattr(s, 'spec') else type(s).__name__


class K(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((4, 4)))
    self.c = nnx.BatchStat(jnp.zeros((4, 4)))


for graph, updates in [(True, True), (True, False), (False, False)]:
  for kind in ('write', 'none', 'add'):
    m = K()
    w = m.w.get_value()

    @nnx.jit(
      in_shardings=(sh('a', 'b'), None), graph=graph, graph_updates=updates
    )
    def f(m, x):
      if kind == 'write':
        m.c[...] = jax.lax.with_sharding_constraint(m.w[...] * x, sh('b', 'a'))
      if kind == 'add':
        m.extra = nnx.Param(jnp.ones((4, 4)))
      return jax.lax.with_sharding_constraint(m.w[...] + 1, sh(None, 'b'))

    y = f(m, 2.0)
    label = f'{graph}-{updates}-{kind}'
    report.value(
      label,
      [
        spec(m.w),
        spec(m.c),
        str(y.sharding.spec),
        hasattr(m, 'extra') and spec(m.extra),
      ],
    )
    report.value(label + '-w-kept', m.w.get_value() is w)
    report.array(label + '-c', m.c[...])

m = nnx.Linear(16, 32, rngs=nnx.Rngs(0))
shardings = nnx.StateSharding(
  {nnx.PathContains('kernel'): sh('a', 'b'), nnx.PathContains('bias'): sh('b')}
)


@nnx.jit(in_shardings=(shardings, None), static_argnums=(2,))
def constrain(m, scale, flip):
  names = ('b', 'a') if flip else ('a', 'b')
  m.kernel = jax.lax.with_sharding_constraint(m.kernel, sh(*names))
  m.bias[...] = m.bias[...] * scale


constrain(m, 0.5, True)
report.value('state-sharding', [spec(m.kernel), spec(m.bias)])


@nnx.jit(in_shardings=(shardings,))
def add(m):
  m.extra = nnx.Param(jnp.ones(2))


with report.raises('state-sharding-new-variable'):
  add(nnx.Linear(16, 32, rngs=nnx.Rngs(0)))
