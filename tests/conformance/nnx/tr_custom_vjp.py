"""nnx.custom_vjp on a module: custom gradients, nondiff_argnums, tree mode."""

import jax.numpy as jnp
import report
from flax import nnx


class Foo(nnx.Module):
  def __init__(self):
    self.x = nnx.Param(jnp.array([1.0, 2.0]))
    self.y = nnx.Param(jnp.array([3.0, 4.0]))


@nnx.custom_vjp
def f(m: Foo):
  return jnp.sin(m.x[...]) * m.y[...]


def f_fwd(m):
  return f(m), (jnp.cos(m.x[...]), jnp.sin(m.x[...]), m)


def f_bwd(res, g):
  ((m_g,), out_g) = g
  cos_x, sin_x, m = res
  m_g.x[...] = cos_x * out_g * m.y[...] * 10.0
  m_g.y[...] = sin_x * out_g
  return (m_g,)


f.defvjp(f_fwd, f_bwd)

m = Foo()
report.array('primal', f(m))
grads = nnx.grad(lambda m: f(m).sum())(m)
report.tree('grads', grads)


@nnx.custom_vjp(graph=False)
def h(m, s):
  return m.x[...] * s


def h_fwd(m, s):
  return h(m, s), (m.x[...], s)


def h_bwd(res, g):
  x, s = res
  return (nnx.State({'x': g * s * 2.0, 'y': jnp.zeros(2)}), g * x * 2.0)


try:
  h.defvjp(h_fwd, h_bwd)
  v, (gm, gs) = nnx.value_and_grad(
    lambda m, s: h(m, s).sum(), argnums=(0, 1), graph=False
  )(m, 3.0)
  report.array('tree-v', v)
  report.array('tree-gs', gs)
except Exception as e:
  report.text('tree-error', type(e).__name__)
