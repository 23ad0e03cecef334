"""nnx.custom_vjp: the cotangents bwd receives. Without graph updates the
updates hold only the Variables the function set; with graph updates the
graph nodes of the output cross as States (an input's node as an empty
State whose cotangent reaches the input's updates)."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Foo(nnx.Module):
  def __init__(self):
    self.x = nnx.Param(jnp.array(1.0))
    self.y = nnx.Param(jnp.array(2.0))
    self.z = nnx.Variable(jnp.array(0.0))


def describe(tree):
  return jax.tree.map(
    lambda v: type(v).__name__,
    tree,
    is_leaf=lambda v: v is None or isinstance(v, nnx.Variable),
  )


for graph in (True, False):
  for mutate in ('z', 'x', 'none', 'both'):
    seen = []

    @nnx.custom_vjp(graph=graph, graph_updates=False)
    def f(m, a):
      if mutate in ('z', 'both'):
        m.z[...] += 1
      if mutate in ('x', 'both'):
        m.x[...] += 1
      return jnp.sin(m.x[...]) * m.y[...] * a

    def fwd(m, a):
      return f(m, a), (m, a)

    def bwd(res, g, updates_g):
      m_up, a_up = updates_g
      seen.append(
        [
          [m_up.x is None, m_up.y is None, type(m_up.z).__name__],
          a_up is None,
          len(jax.tree.leaves(updates_g)),
        ]
      )
      m, a = res
      m_g = nnx.clone(m)
      m_g.x[...] = g
      m_g.y[...] = g
      return m_g, g

    f.defvjp(fwd, bwd)
    m = Foo()
    grads = nnx.grad(f, argnums=(0, 1), graph=graph, graph_updates=False)(
      m, jnp.array(3.0)
    )
    label = f'{graph}-{mutate}'
    report.value(label, seen)
    report.tree(label + '-state', nnx.state(m))
    report.array(label + '-grad-a', grads[1])

for returned in ('module', 'variable', 'new', 'array'):
  seen = []

  @nnx.custom_vjp(graph=True, graph_updates=True)
  def f(m):
    y = jnp.sin(m.x[...]) * m.y[...]
    if returned == 'module':
      return y, m
    if returned == 'variable':
      return y, m.y
    if returned == 'new':
      return y, nnx.Linear(1, 2, rngs=nnx.Rngs(1))
    return y, m.y[...] * 1.0

  def fwd(m):
    return f(m), (jnp.cos(m.x[...]), m)

  def bwd(res, g):
    (m_g,), (y_g, o_g) = g
    seen.append([type(o_g).__name__, str(jax.tree.map(jnp.shape, o_g))])
    cos_x, m = res
    m_g['x'][...] = m_g['x'][...] + cos_x * y_g * m.y[...]
    return (m_g,)

  f.defvjp(fwd, bwd)
  m = Foo()

  def loss(m):
    y, o = f(m)
    if returned == 'module':
      return y + 3 * o.y[...], o is m
    if returned == 'variable':
      return y + 3 * o[...], o is m.y
    if returned == 'new':
      return y + o.kernel[...].sum(), type(o).__name__
    return y + 3 * o, None

  grads, aux = nnx.grad(loss, has_aux=True)(m)
  report.value(f'out-{returned}', [seen, aux])
  report.tree(f'out-{returned}-grads', grads)
