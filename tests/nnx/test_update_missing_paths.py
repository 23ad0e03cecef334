"""nnx.update with paths the node does not have: a missing leaf is set (a
copy of a Variable), a missing inner key gets the subtree the user gave
(the same mapping), as Flax 0.12.8."""

import jax.numpy as jnp
import pytest

from flax import nnx


class Loose(nnx.Module, pytree=False):
  def __init__(self):
    self.w = nnx.Param(jnp.zeros(2))


class Strict(nnx.Module):
  pass


def test_missing_subtree_is_the_given_mapping():
  m = Loose()
  state = nnx.State({'sub': {'c': nnx.Param(jnp.array(2))}})
  nnx.update(m, state)
  assert type(m.sub) is nnx.State and m.sub['c'] is state['sub']['c']
  given = {'d': {'e': nnx.Param(jnp.array(3))}, 'top': nnx.Param(jnp.ones(1))}
  nnx.update(m, given)
  assert m.d is given['d'] and m.d['e'] is given['d']['e']
  # a missing leaf is a copy
  assert isinstance(m.top, nnx.Param) and m.top is not given['top']
  # later updates go into the new subtree, and the state sees it
  nnx.update(m, {'sub': {'f': nnx.Param(jnp.array(5))}})
  assert sorted(m.sub) == ['c', 'f']
  paths = [p for p, _ in nnx.to_flat_state(nnx.state(m))]
  assert paths == [('d', 'e'), ('sub', 'c'), ('sub', 'f'), ('top',), ('w',)]
  nnx.update(m, {'w': jnp.ones(2)})
  assert m.w[...].tolist() == [1.0, 1.0]


def test_missing_subtree_on_a_pytree_is_static_data():
  with pytest.raises(ValueError, match="assigned to static attribute 'b'"):
    nnx.update(Strict(), {'b': {'c': nnx.Param(jnp.array(2))}})
