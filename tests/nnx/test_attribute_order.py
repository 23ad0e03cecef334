"""Transforms with graph updates leave their input objects' attributes in
sorted order (as Flax 0.12.8 does: printed, iterated and listed by ``vars``
in that order); the others leave the order alone."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

X = jnp.ones((1, 1))
LINEAR_SORTED = ['bias', 'in_features', 'kernel', 'out_features', 'use_bias']


class Linear(nnx.Module):
  def __init__(self, din, dout):
    self.kernel = nnx.Param(jnp.ones((din, dout)))
    self.bias = nnx.Param(jnp.zeros((dout,)))
    self.in_features = din
    self.out_features = dout
    self.use_bias = True

  def __call__(self, x):
    return x @ self.kernel[...] + self.bias[None]


class Model(nnx.Module):
  def __init__(self):
    self.z = Linear(1, 1)
    self.act = 'relu'
    self.d = nnx.Dict({'z': nnx.Param(jnp.ones(1)), 'a': 1, 'B': 2})
    self.a = nnx.Param(jnp.ones(1))


def _keys(obj):
  return list(vars(obj))


SORTING = {
  'jit': lambda m: nnx.jit(lambda m: m.z(X))(m),
  'jit_static': lambda m: nnx.jit(lambda m, k: m.z(X), static_argnums=1)(m, 1),
  'grad': lambda m: nnx.grad(lambda m: m.z(X).sum())(m),
  'remat': lambda m: nnx.remat(lambda m: m.z(X))(m),
  'vmap': lambda m: nnx.vmap(lambda m, x: m.z(x), in_axes=(None, 0))(
    m, jnp.ones((2, 1, 1))
  ),
  'cond': lambda m: nnx.cond(True, lambda m: m.z(X), lambda m: m.z(X), m),
  'fori': lambda m: nnx.fori_loop(0, 2, lambda i, c: c, (m, 0)),
}
KEEPING = {
  'tree_jit': lambda m: nnx.jit(lambda m: m.z(X), graph=False)(m),
  'no_updates': lambda m: nnx.jit(lambda m: m.z(X), graph_updates=False)(m),
  'cached_partial': lambda m: nnx.cached_partial(
    nnx.jit(lambda m: m.z(X)), m
  )(),
  'eval_shape': lambda m: nnx.eval_shape(lambda m: m.z(X), m),
  'update': lambda m: nnx.update(m, nnx.state(m)),
  'jax_jit': lambda m: jax.jit(lambda m: m.z(X))(m),
}


@pytest.mark.parametrize('name', sorted(SORTING))
def test_graph_update_transforms_sort_attributes(name):
  m = Model()
  SORTING[name](m)
  assert _keys(m) == ['a', 'act', 'd', 'z']
  assert _keys(m.z) == LINEAR_SORTED
  assert list(m.d) == ['B', 'a', 'z']  # nnx.Dict iterates in the new order
  SORTING[name](m)  # a second call (cached) keeps it sorted
  assert _keys(m) == ['a', 'act', 'd', 'z']


@pytest.mark.parametrize('name', sorted(KEEPING))
def test_other_calls_keep_attribute_order(name):
  m = Model()
  KEEPING[name](m)
  KEEPING[name](m)
  assert _keys(m) == ['z', 'act', 'd', 'a']
  assert list(m.d) == ['z', 'a', 'B']


def test_attribute_added_in_the_call_is_sorted_in():
  m = Model()

  @nnx.jit
  def f(m):
    m.b = nnx.Param(jnp.zeros(1))

  f(m)
  assert _keys(m) == ['a', 'act', 'b', 'd', 'z']
  m.c = 1  # added outside: appended until the next transform
  assert _keys(m)[-1] == 'c'
  nnx.jit(lambda m: None)(m)
  assert _keys(m) == ['a', 'act', 'b', 'c', 'd', 'z']


def test_repr_after_a_training_step_lists_attributes_sorted():
  m = Linear(1, 1)
  nnx.jit(lambda m: m(X))(m)
  text = repr(m)
  assert (
    text.index('bias=') < text.index('in_features=') < text.index('kernel=')
  )


def test_cached_partial_leaves_order_to_later_calls():
  m = Model()
  f = nnx.jit(lambda m: m.z(X))
  cached = nnx.cached_partial(f, m)
  assert cached.__wrapped__ is f
  cached()
  assert _keys(m) == ['z', 'act', 'd', 'a']
  nnx.jit(lambda m: None)(m)  # a later plain call sorts
  assert _keys(m) == ['a', 'act', 'd', 'z']


def test_jax_tree_map_rebuilds_data_then_static_attributes_sorted():
  class P(nnx.Pytree):
    def __init__(self):
      self.z = nnx.Param(jnp.ones(1))
      self.s = 'static'
      self.a = jnp.ones(1)
      self.b = 2

  p = jax.tree.map(lambda x: x, P())
  assert _keys(p) == ['a', 'z', 'b', 's']
  # insertion order is not part of the structure
  q = P()
  del q.s
  q.s = 'static'
  assert jax.tree.structure(q) == jax.tree.structure(P())
  assert repr(jax.tree.structure(P())).startswith(
    "PyTreeDef(CustomNode(P[(('a', 'z'), ('b', 's'), (2, 'static'))]"
  )


def test_dataclass_pytree_keeps_the_pytree_repr():
  import dataclasses

  @dataclasses.dataclass
  class DM(nnx.Module):
    x: int
    y: int = 2

  assert repr(DM(1)) == 'DM(\n  x=1,\n  y=2\n)'
  assert '__repr__' in DM.__dict__
