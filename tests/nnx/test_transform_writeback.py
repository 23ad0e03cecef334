"""What graph-mode transforms write back into their inputs: structure
changes, metadata, containers mutated in place."""

import jax
import jax.numpy as jnp
import pytest

from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.lst = nnx.data([jnp.zeros(2)])


def _pure(m):
  return jax.tree.map(lambda x: x.tolist(), nnx.state(m).to_pure_dict())


def test_vmap_broadcast_input_gains_attributes():
  m = Model()

  def f(m, x):
    m.b = nnx.Param(jnp.zeros(2))
    m.lst.append(jnp.ones(2))
    m.w = nnx.Param(m.w[...] * 2)
    return x

  nnx.vmap(f, in_axes=(None, 0))(m, jnp.arange(3.0))
  assert _pure(m) == {
    'b': [0.0, 0.0],
    'lst': {0: [0.0, 0.0], 1: [1.0, 1.0]},
    'w': [2.0, 2.0],
  }


def test_vmap_broadcast_input_cannot_gain_batched_values():
  def f(m, x):
    m.b = nnx.Param(x)

  with pytest.raises(ValueError, match='got axis spec None but output was'):
    nnx.vmap(f, in_axes=(None, 0))(Model(), jnp.arange(3.0))
