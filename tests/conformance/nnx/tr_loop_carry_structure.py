"""nnx.fori_loop / nnx.while_loop carries that change structure: a plain
carry is JAX's loop TypeError (scan for static bounds, while_loop
otherwise); a carried Module that gains an attribute is the graph-mode
error, or the 'pytree structure error' without graph updates."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.zeros(2))


def grow(m):
  m.b = nnx.Param(jnp.zeros(2))
  return m


for name, kw in [
  ('graph', dict()),
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  with report.raises(f'{name} fori plain'):
    nnx.fori_loop(0, 2, lambda i, c: (c, c), jnp.zeros(2), **kw)
  with report.raises(f'{name} while plain'):
    nnx.while_loop(lambda c: False, lambda c: (c, c), jnp.zeros(2), **kw)
  with report.raises(f'{name} fori traced bounds plain'):
    jax.jit(
      lambda n: nnx.fori_loop(0, n, lambda i, c: (c, c), jnp.zeros(2), **kw)
    )(2)
  if name == 'tree':
    continue
  with report.raises(f'{name} fori grow'):
    nnx.fori_loop(0, 2, lambda i, m: grow(m), M(), **kw)
  with report.raises(f'{name} while grow'):
    nnx.while_loop(
      lambda m: m.a[...].sum() < 1,
      lambda m: (m.a.__setitem__(..., m.a[...] + 1), grow(m))[1],
      M(),
      **kw,
    )
