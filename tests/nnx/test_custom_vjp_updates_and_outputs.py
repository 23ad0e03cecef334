"""nnx.custom_vjp: what bwd receives. Without graph updates the updates'
cotangents hold only the Variables the function set (None elsewhere);
with graph updates graph nodes in the output cross as States, an input's
node as an empty State whose cotangent reaches that input's updates."""

import pathlib
import sys
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import stand_in_layers  # noqa: E402


class Foo(nnx.Module):
  def __init__(self):
    self.x = nnx.Param(jnp.array(1.0))
    self.y = nnx.Param(jnp.array(2.0))
    self.z = nnx.Variable(jnp.array(0.0))
    self.sub = stand_in_layers.Linear(1, 1, rngs=nnx.Rngs(0))


@pytest.mark.parametrize('graph', [True, False])
def test_without_graph_updates_bwd_sees_only_the_variables_set(graph):
  seen = []

  @nnx.custom_vjp(graph=graph, graph_updates=False)
  def f(m, a):
    m.z[...] += 1
    return jnp.sin(m.x[...]) * m.y[...] * a

  def fwd(m, a):
    return f(m, a), (m, a)

  def bwd(res, g, updates_g):
    m_up, a_up = updates_g
    seen.append(
      [
        m_up.x,
        m_up.y,
        type(m_up.z).__name__,
        a_up,
        len(jax.tree.leaves(updates_g)),
      ]
    )
    m, a = res
    m_g = jax.tree.map(jnp.zeros_like, m)
    m_g.x[...] = g
    return m_g, g

  f.defvjp(fwd, bwd)
  m = Foo()
  grads = nnx.grad(f, argnums=(0, 1), graph=graph, graph_updates=False)(
    m, jnp.array(3.0)
  )
  assert seen == [[None, None, 'Variable', None, 1]]
  assert float(m.z[...]) == 1.0  # the update reached the argument
  assert float(grads[0].x[...]) == 1.0 and float(grads[1]) == 1.0


@pytest.mark.parametrize('returned', ['module', 'submodule', 'variable'])
def test_graph_updates_output_nodes_of_the_inputs_are_references(returned):
  seen = []

  @nnx.custom_vjp(graph=True, graph_updates=True)
  def f(m):
    y = jnp.sin(m.x[...]) * m.y[...]
    return y, {'module': m, 'submodule': m.sub, 'variable': m.y}[returned]

  def fwd(m):
    return f(m), (jnp.cos(m.x[...]), m)

  def bwd(res, g):
    (m_g,), (y_g, o_g) = g
    seen.append(o_g)
    cos_x, m = res
    m_g['x'][...] = m_g['x'][...] + cos_x * y_g * m.y[...]
    return (m_g,)

  f.defvjp(fwd, bwd)
  m = Foo()

  def loss(m):
    y, o = f(m)
    same = o is {'module': m, 'submodule': m.sub, 'variable': m.y}[returned]
    y_var = (
      o if returned == 'variable' else o.y if returned == 'module' else m.y
    )
    return y + 3 * y_var[...], same

  grads, same = nnx.grad(loss, has_aux=True)(m)
  assert same
  assert len(seen) == 1 and type(seen[0]) is nnx.State and not seen[0]
  np.testing.assert_allclose(grads['x'][...], np.cos(1.0) * 2.0, rtol=1e-6)
  # the output's cotangent reached the input's updates
  np.testing.assert_allclose(grads['y'][...], 3.0)


def test_graph_updates_new_output_node_crosses_as_its_state():
  seen = []

  @nnx.custom_vjp(graph=True, graph_updates=True)
  def f(m):
    return stand_in_layers.Linear(1, 2, rngs=nnx.Rngs(1)), m.x[...] * 2

  def fwd(m):
    return f(m), ()

  def bwd(res, g):
    (m_g,), (new_g, _) = g
    seen.append(sorted(new_g.keys()))
    return (m_g,)

  f.defvjp(fwd, bwd)

  def loss(m):
    new, y = f(m)
    assert type(new) is stand_in_layers.Linear
    return new.kernel[...].sum() + y

  nnx.grad(loss)(Foo())
  assert seen == [['bias', 'kernel']]
