"""Variable metadata set inside transforms without graph updates comes
back to the inputs; a tree-mode loop whose carry metadata changes is
JAX's carry error."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3), tag='a')


def set_tag(m, *rest):
  m.w.set_metadata('tag', 'b')
  return (m.w[...] * 1.0).sum()


for kw in ({'graph': False}, {'graph_updates': False}):
  mode = 'tree' if 'graph' in kw else 'no-updates'
  calls = {
    'vmap': lambda m: nnx.vmap(set_tag, in_axes=(None, 0), **kw)(
      m, jnp.ones(2)
    ),
    'grad': lambda m: nnx.grad(set_tag, **kw)(m),
    'cond': lambda m: nnx.cond(True, set_tag, set_tag, m, **kw),
    'switch': lambda m: nnx.switch(0, [set_tag, set_tag], m, **kw),
    'remat': lambda m: nnx.remat(set_tag, **kw)(m),
    'checkify': lambda m: nnx.checkify(set_tag, **kw)(m),
    'eval_shape': lambda m: nnx.eval_shape(set_tag, m, **kw),
  }
  for name, call in calls.items():
    m = M()
    call(m)
    report.value(f'{mode} {name} tag', m.w.get_metadata()['tag'])

for kw in ({'graph': False}, {'graph_updates': False}):
  f = nnx.jit(set_tag, **kw)
  for i in range(2):
    m = M()
    f(m)
    report.value(f'{kw} jit call {i} tag', m.w.get_metadata()['tag'])
  mesh = jax.make_mesh((1,), ('d',), devices=jax.devices()[:1])
  m = M()
  nnx.shard_map(
    set_tag, mesh=mesh, in_specs=(jax.P(),), out_specs=jax.P(), **kw
  )(m)
  report.value(f'{kw} shard_map tag', m.w.get_metadata()['tag'])
m = M()
nnx.jit(set_tag)(m)
report.value('graph jit tag', m.w.get_metadata()['tag'])


def body(i, m):
  m.w.set_metadata('tag', 'b')
  return m


with report.raises('tree fori_loop metadata change'):
  nnx.fori_loop(0, 2, body, M(), graph=False)
with report.raises('tree while_loop metadata change'):
  nnx.while_loop(lambda m: False, lambda m: body(0, m), M(), graph=False)
