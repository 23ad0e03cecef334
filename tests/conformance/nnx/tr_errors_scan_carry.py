"""nnx.scan carry checks: a carry returned twice (ValueError), a carry
whose structure changes (ValueError), a carried module that gains an
attribute (TypeError), a carry holding a different module (ValueError)."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3))


def bad_carry(c, x):
  return (c, c), x


with report.raises('scan-carry-structure'):
  nnx.scan(bad_carry, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(
    jnp.zeros(2), jnp.ones(3)
  )


def grow(m, x):
  m.extra = nnx.Param(jnp.zeros(()))
  return m, x


with report.raises('scan-carry-module-grows'):
  nnx.scan(grow, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(
    M(), jnp.ones(3)
  )


with report.raises('scan-carry-dict-grows'):
  nnx.scan(
    lambda c, x: ({'a': c['a'], 'b': c['a']}, x),
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
  )({'a': jnp.zeros(2)}, jnp.ones(3))

with report.raises('scan-carry-other-module'):
  nnx.scan(
    lambda c, x: (M(), x), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0)
  )(M(), jnp.ones(3))

(m2, c), ys = nnx.scan(
  lambda c, x: ((c[0], c[1] + x), x * 2),
  in_axes=(nnx.Carry, 0),
  out_axes=(nnx.Carry, 0),
)((M(), jnp.zeros(())), jnp.ones(3))
report.array('carry-ok', c)
report.array('ys-ok', ys)

for g in (True, False):
  with report.raises(f'no-updates-other-module-{g}'):
    nnx.scan(
      lambda c, x: (M(), x),
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      graph=g,
      graph_updates=False,
    )(M(), jnp.ones(3))
  with report.raises(f'no-updates-carry-twice-{g}'):
    nnx.scan(
      bad_carry,
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      graph=g,
      graph_updates=False,
    )(jnp.zeros(2), jnp.ones(3))

with report.raises('no-updates-module-grows'):
  nnx.scan(
    grow, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), graph_updates=False
  )(M(), jnp.ones(3))
