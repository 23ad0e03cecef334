"""Variables nested in plain containers inside other pytrees (e.g. an optax
state holding nnx.State of dicts) are part of the graph."""

import numpy as np

import jax.numpy as jnp
from flax import nnx


class Holder(nnx.Pytree):
  def __init__(self):
    inner = nnx.State({'b': {'a': nnx.Param(jnp.ones(2))}})
    self.s = nnx.data((inner,))


def test_split_merge_copies_nested_variables():
  p = Holder()
  original = p.s[0]['b']['a']
  graphdef, state = nnx.split(p)
  assert state.to_pure_dict() == {'s': {0: {'b': {'a': original[...]}}}}
  p2 = nnx.merge(graphdef, state)
  # merge reuses the State's Variables (copy=True makes new ones).
  assert p2.s[0]['b']['a'] is original and p2 is not p
  p3 = nnx.merge(graphdef, state, copy=True)
  assert p3.s[0]['b']['a'] is not original
  np.testing.assert_array_equal(p2.s[0]['b']['a'][...], [1.0, 1.0])


def test_nested_variables_mutable_under_jit():
  p = Holder()

  @nnx.jit
  def f(p):
    v = p.s[0]['b']['a']
    v[...] = v[...] + 1

  f(p)
  np.testing.assert_array_equal(p.s[0]['b']['a'][...], [2.0, 2.0])
