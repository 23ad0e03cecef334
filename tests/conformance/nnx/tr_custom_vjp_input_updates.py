"""nnx.custom_vjp without graph updates: a differentiated input mutated in
the primal keeps its update, and a bwd taking three parameters gets the
cotangents of the input updates (graph_updates=False and tree mode)."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

for name, kw in [
  ('gu=False', dict(graph_updates=False)),
  ('tree', dict(graph=False)),
]:
  m = nnx.Dict(a=nnx.Param(jnp.array(1.0)), b=nnx.Param(jnp.array(3.0)))

  @nnx.custom_vjp(**kw)
  def f(m):
    m['a'][...] += 1
    return m['a'][...] * m['b'][...]

  def f_fwd(m):
    return f(m), (m,)

  seen = {}

  def f_bwd(res, g, updates_g):
    (m,) = res
    seen['updates type'] = type(updates_g[0]['a']).__name__
    gm = nnx.clone(m)
    gm['a'][...] = g * m['b'][...]
    gm['b'][...] = g * m['a'][...]
    return (gm,)

  f.defvjp(f_fwd, f_bwd)
  g = nnx.grad(f)(m)
  report.value(f'{name} updates_g type', seen['updates type'])
  report.array(f'{name} grad a', g['a'][...])
  report.array(f'{name} grad b', g['b'][...])

  m2 = nnx.Dict(a=nnx.Param(jnp.array(1.0)), b=nnx.Param(jnp.array(3.0)))

  @nnx.custom_vjp(**kw)
  def h(m):
    m['a'][...] += 1
    return m['a'][...] * m['b'][...]

  def h_bwd(res, g):
    (m,) = res
    gm = nnx.clone(m)
    gm['a'][...] = g * m['b'][...]
    gm['b'][...] = g * m['a'][...]
    return (gm,)

  h.defvjp(lambda m: (h(m), (m,)), h_bwd)
  g2 = nnx.grad(h)(m2)
  report.array(f'{name} two-arg bwd grad a', g2['a'][...])
  report.array(f'{name} a after grad', m2['a'][...])
  report.array(f'{name} primal', h(m2))
  report.array(f'{name} a after primal', m2['a'][...])

  k1 = nnx.Dict(a=nnx.Param(jnp.array(1.0)), b=nnx.Param(jnp.array(3.0)))
  k2 = nnx.Dict(c=nnx.Param(jnp.array(2.0)))

  @nnx.custom_vjp(**kw)
  def two(m, k, x):
    return m['a'][...] * m['b'][...] * k['c'][...] * x

  def two_bwd(res, g):
    m, k, x = res
    gm = nnx.clone(m)
    gm['a'][...] = g * m['b'][...]
    gm['b'][...] = g * m['a'][...]
    gk = nnx.clone(k)
    gk['c'][...] = g
    return (gm, gk, g)

  two.defvjp(lambda m, k, x: (two(m, k, x), (m, k, x)), two_bwd)
  gs = jax.grad(lambda m, k: two(m, k, jnp.array(1.0)), argnums=(0, 1))(k1, k2)
  report.array(f'{name} two args grad c', gs[1]['c'][...])
