"""nnx.vmap: a graph node mapped over an int axis (or a StateAxes with one
axis) may gain or lose attributes inside; the new leaves are batched on
that axis. A broadcast node (in_axes None) that changes is a ValueError."""

import jax.numpy as jnp
import report
from flax import nnx


class M(nnx.Module):
  def __init__(self, n=3):
    self.w = nnx.Param(jnp.ones((n, 2)))
    self.b = nnx.Param(jnp.zeros((n,)))


def grow(m, x):
  m.extra = nnx.Param(x * 2)
  return x


with report.raises('broadcast-node-grows'):
  nnx.vmap(grow, in_axes=(None, 0))(M(), jnp.arange(3.0))

m = M()
nnx.vmap(grow, in_axes=(0, 0))(m, jnp.arange(3.0))
report.tree('grown-axis0', nnx.state(m))


class T(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((2, 3)))


def grow_pair(m, x):
  m.extra = nnx.Param(jnp.stack([x, x]))
  return x


t = T()
nnx.vmap(grow_pair, in_axes=(1, 0))(t, jnp.arange(3.0))
report.tree('grown-axis1', nnx.state(t))


def shrink(m, x):
  del m.b
  return x


m = M()
nnx.vmap(shrink)(m, jnp.arange(3.0))
report.value('shrunk', [hasattr(m, 'b'), list(m.w.shape)])

m = M()
nnx.vmap(grow, in_axes=(nnx.StateAxes({...: 0}), 0))(m, jnp.arange(3.0))
report.array('state-axes-extra', m.extra[...])
