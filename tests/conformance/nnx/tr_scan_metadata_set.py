"""Variable metadata set inside nnx.scan: a scanned Variable's comes back
(graph mode, graph_updates=False, tree mode; eager calls); a broadcast
input's is dropped in graph mode and a carry error in the pytree modes; a
carried Variable's is a carry error."""

import jax.numpy as jnp
import report
from flax import nnx


class Holder(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.zeros((3, 2)))


def set_foo(m):
  m.a.set_metadata('foo', 1)


for name, kw in [
  ('graph', dict()),
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  m = Holder()
  nnx.scan(
    lambda c, m, x: (set_foo(m), (c, x))[1], in_axes=(nnx.Carry, 0, 0), **kw
  )(0.0, m, jnp.ones(3))
  report.value(
    f'{name} scanned', [m.a.get_metadata().get('foo'), list(m.a.shape)]
  )
  v = nnx.Param(jnp.ones(3))
  nnx.scan(
    lambda c, v: (v.set_metadata('foo', 2), (c, None))[1],
    in_axes=(nnx.Carry, 0),
    **kw,
  )(0, v)
  report.value(f'{name} scanned Variable', v.get_metadata().get('foo'))

  def broadcast():
    m = Holder()
    nnx.scan(
      lambda c, m, x: (set_foo(m), (c, x))[1],
      in_axes=(nnx.Carry, None, 0),
      **kw,
    )(0.0, m, jnp.ones(3))
    return m.a.get_metadata().get('foo')

  if name == 'graph':
    report.value(f'{name} broadcast', broadcast())
  else:
    with report.raises(f'{name} broadcast'):
      broadcast()
  with report.raises(f'{name} carried'):
    nnx.scan(lambda m, x: (set_foo(m), (m, x))[1], **kw)(Holder(), jnp.ones(3))
