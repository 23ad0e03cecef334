"""replace_by_pure_dict puts new Variables into the State: the split Module
keeps its values (until nnx.update), also inside jax.jit; graph and tree
mode; key paths and their errors."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))


@jax.jit
def f(w):
  g, params, rest = nnx.split(m, nnx.Param, nnx.Not(nnx.Param))
  nnx.replace_by_pure_dict(params, {'kernel': w, 'bias': jnp.zeros(3)})
  return nnx.merge(g, params, rest, copy=True)(jnp.ones((1, 2)))


report.array('under jit', f(jnp.full((2, 3), 0.5)))
kernel = m.kernel[...]
for graph in (True, False):
  _, params = nnx.split(m, nnx.Param, graph=graph)
  old = params['kernel']
  nnx.replace_by_pure_dict(
    params, {'kernel': jnp.ones((2, 3)), 'bias': jnp.ones(3)}
  )
  report.value(
    f'identity graph={graph}',
    [params['kernel'] is m.kernel, old is m.kernel],
  )
  report.array(f'module kept graph={graph}', m.kernel[...])
  report.tree(f'state graph={graph}', params)
nnx.update(m, params)
report.array('after update', m.kernel[...])

v = nnx.Param(jnp.zeros(2), foo=3)
s = nnx.State(
  {'v': v, 'n': 3, 'l': {0: nnx.Param(2)}, 'd': {'0': nnx.Param(1)}}
)
s.replace_by_pure_dict({'v': jnp.ones(2), 'n': 5, 'l': {'0': 7}, 'd': {'0': 8}})
report.text('state repr', repr(s))
report.value('new variable', [s['v'] is v, s['v'].foo, v[...].tolist()])
r = nnx.Param(jnp.zeros(2), ref=True)
s = nnx.State({'r': r})
nnx.replace_by_pure_dict(s, {'r': jnp.ones(2)})
report.value(
  'ref', [s['r'] is r, s['r'].ref, type(s['r'].get_raw_value()).__name__]
)
report.array('old ref kept', r[...])


def fresh():
  return nnx.State(
    {'v': nnx.Param(1), 'l': {0: nnx.Param(2)}, 'd': {'0': nnx.Param(1)}}
  )


for label, bad in [
  ('missing key', {'zz': 1}),
  ('leaf for a mapping', {'l': 3}),
  ('mapping for a leaf', {'v': {'x': 1}}),
  ('int for a str key', {'d': {0: 1}}),
]:
  with report.raises(label):
    nnx.replace_by_pure_dict(fresh(), bad)
  try:
    nnx.replace_by_pure_dict(fresh(), bad)
  except ValueError as e:
    report.text(f'{label} message', str(e))
