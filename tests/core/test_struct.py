"""Tests of flax.struct."""

import dataclasses
import doctest
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import struct
from flax.core import state_dict


def test_doctests():
  assert doctest.testmod(struct).failed == 0


@struct.dataclass
class Model:
  params: Any
  apply_fn: Any = struct.field(pytree_node=False)


def apply_fn(params, x):
  return params['w'] * x


def test_dataclass_is_frozen_and_replace_works():
  model = Model({'w': 1.0}, apply_fn)
  with pytest.raises(dataclasses.FrozenInstanceError):
    model.params = {}
  new = model.replace(params={'w': 2.0})
  assert new.params == {'w': 2.0} and new.apply_fn is apply_fn
  assert model.params == {'w': 1.0}
  assert repr(model).startswith("Model(params={'w': 1.0}, apply_fn=")


def test_static_fields_are_not_leaves():
  model = Model({'w': jnp.ones(3)}, apply_fn)
  leaves, treedef = jax.tree_util.tree_flatten(model)
  assert len(leaves) == 1
  rebuilt = jax.tree_util.tree_unflatten(treedef, [jnp.zeros(3)])
  assert rebuilt.apply_fn is apply_fn
  paths = [
    jax.tree_util.keystr(p)
    for p, _ in jax.tree_util.tree_flatten_with_path(model)[0]
  ]
  assert paths == [".params['w']"]


def test_grad_and_jit_over_dataclass():
  model = Model({'w': jnp.array([1.0, 2.0])}, apply_fn)

  @jax.jit
  def loss(m, x):
    return jnp.sum(m.apply_fn(m.params, x) ** 2)

  grads = jax.grad(loss)(model, jnp.array([3.0, 4.0]))
  assert grads.apply_fn is apply_fn
  # d/dw sum((w*x)^2) = 2 w x^2
  np.testing.assert_allclose(grads.params['w'], [18.0, 64.0])


def test_static_field_change_changes_treedef():
  a = Model(1.0, apply_fn)
  b = Model(1.0, print)
  assert jax.tree_util.tree_structure(a) != jax.tree_util.tree_structure(b)


def test_dataclass_is_idempotent_and_accepts_kwargs():
  assert struct.dataclass(Model) is Model

  @struct.dataclass(frozen=True, kw_only=True)
  class Config:
    a: int
    b: int = 2

  with pytest.raises(TypeError):
    Config(1)
  assert Config(a=1).b == 2


def test_fields_with_init_false_are_kept_out_of_the_tree():
  @struct.dataclass
  class WithDerived:
    x: float
    twice: float = dataclasses.field(init=False, default=0.0)

  obj = WithDerived(1.0)
  assert jax.tree_util.tree_leaves(obj) == [1.0]
  assert jax.tree_util.tree_map(lambda v: v + 1, obj).x == 2.0


def test_pytreenode_subclass():
  class Partial(struct.PyTreeNode):
    fn: Any = struct.field(pytree_node=False)
    args: Any = ()

    def __call__(self, *more):
      return self.fn(*self.args, *more)

  p = Partial(jnp.add, (jnp.array(1.0),))
  assert p(2.0) == 3.0
  assert jax.tree_util.tree_leaves(p) == [jnp.array(1.0)]
  mapped = jax.tree_util.tree_map(lambda v: v * 10, p)
  assert isinstance(mapped, Partial) and mapped(1.0) == 11.0
  assert p.replace(args=(5.0,))(1.0) == 6.0
  with pytest.raises(dataclasses.FrozenInstanceError):
    p.args = ()


def test_pytreenode_kw_only_and_inheritance():
  class Base(struct.PyTreeNode, kw_only=True):
    a: int

  with pytest.raises(TypeError):
    Base(1)
  assert Base(a=1).a == 1

  class Child(struct.PyTreeNode):
    a: int
    b: int = struct.field(pytree_node=False, default=3)

  class GrandChild(Child):
    c: int = 4

  g = GrandChild(1)
  assert (g.a, g.b, g.c) == (1, 3, 4)
  assert jax.tree_util.tree_leaves(g) == [1, 4]


def test_state_dict_holds_pytree_fields_only():
  model = Model({'w': np.ones(2)}, apply_fn)
  state = state_dict.to_state_dict(model)
  assert list(state) == ['params']
  restored = state_dict.from_state_dict(model, {'params': {'w': np.zeros(2)}})
  assert isinstance(restored, Model) and restored.apply_fn is apply_fn
  np.testing.assert_array_equal(restored.params['w'], np.zeros(2))


def test_state_dict_errors():
  model = Model({'w': 1}, apply_fn)
  with pytest.raises(ValueError) as info:
    state_dict.from_state_dict({'m': model}, {'m': {}})
  assert str(info.value) == (
    'Missing field params in state dict while restoring an instance of '
    'Model, at path ./m'
  )
  with pytest.raises(ValueError) as info:
    state_dict.from_state_dict(model, {'params': {'w': 2}, 'x': 1, 'y': 2})
  assert str(info.value) == (
    'Unknown field(s) "x,y" in state dict while restoring an instance of '
    'Model at path .'
  )


def test_generic_pytree_node_keeps_parameters():
  import typing

  t = typing.TypeVar('T')

  class Box(struct.PyTreeNode, typing.Generic[t]):
    x: t

  assert Box.__parameters__ == (t,)
  assert Box[int](3).x == 3
