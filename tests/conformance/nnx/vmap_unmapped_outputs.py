"""nnx.vmap in every mode: a broadcast Variable given a batched value and a
batched output under out_axes=None raise; unbatched ones come back as
they are (Python numbers included)."""

import jax.numpy as jnp
import report
from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3))
    self.c = nnx.BatchStat(jnp.zeros(3))
    self.n = nnx.data(4)


x = jnp.arange(6.0).reshape(2, 3)
for name, kw in [
  ('graph', {}),
  ('graph_updates=False', {'graph_updates': False}),
  ('tree', {'graph': False}),
]:
  m = Model()

  @nnx.vmap(in_axes=(None, 0), **kw)
  def f(m, x):
    m.c[...] = m.c[...] + x
    return m.w * x

  with report.raises(f'{name}: batched into broadcast'):
    f(m, x)
  report.array(f'{name}: c after the error', m.c[...])

  @nnx.vmap(in_axes=(None, 0), **kw)
  def g(m, x):
    m.c[...] = m.c[...] + 1
    return m.w * x

  report.array(f'{name}: g', g(m, x))
  report.array(f'{name}: c', m.c[...])
  report.value(f'{name}: n', [type(m.n).__name__, m.n])
  with report.raises(f'{name}: out_axes None batched'):
    nnx.vmap(lambda x: x * 2, out_axes=None, **kw)(x)
  y, three = nnx.vmap(
    lambda x, y: (x * 2, y), in_axes=(0, None), out_axes=(0, None), **kw
  )(x, 3)
  report.array(f'{name}: y', y)
  report.value(f'{name}: unmapped output', [type(three).__name__, three])
