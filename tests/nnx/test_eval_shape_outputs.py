"""What ``nnx.eval_shape`` returns, and the duplicate outputs of the tree
mode transforms (settled against Flax 0.12.8 with the oracle).

Every object ``nnx.eval_shape`` returns is new and abstract: inputs given
back, and Variables or Modules captured from outside the function, come
back as abstract copies, and the caller's objects are left as they are.
"""

import jax
import jax.numpy as jnp
import pytest

from flax import nnx

MODES = [{}, {'graph': False}, {'graph_updates': False}]


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.zeros(3))


def _abstract(x):
  return isinstance(x, jax.ShapeDtypeStruct)


def test_graph_mode_returns_new_objects_for_inputs():
  model = Model()
  out, w = nnx.eval_shape(lambda m: (m, m.w), model)
  assert out is not model and w is not model.w
  assert out.w is w  # sharing among the outputs is kept
  assert _abstract(out.w.get_value())
  assert isinstance(model.w.get_value(), jax.Array)


@pytest.mark.parametrize('kw', MODES)
def test_captured_objects_come_back_abstract(kw):
  model = Model()
  out = nnx.eval_shape(lambda: model, **kw)
  assert out is not model
  assert _abstract(out.w.get_value()) and out.w.shape == (3,)
  assert isinstance(model.w.get_value(), jax.Array)

  param = nnx.Param(jnp.ones(2))

  class Holder(nnx.Module):
    def __init__(self):
      self.p = param
      self.q = nnx.Param(jnp.zeros(4))

  held = nnx.eval_shape(Holder, **kw)
  assert held.p is not param and held.p.shape == (2,)
  assert held.q.shape == (4,)
  assert isinstance(param.get_value(), jax.Array)


def test_captured_variable_shared_in_graph_mode():
  param = nnx.Param(jnp.ones(2))
  out = nnx.eval_shape(lambda: {'a': param, 'b': [param, 3]})
  assert out['a'] is out['b'][0]
  assert out['b'][1] == jax.ShapeDtypeStruct((), jnp.int32, weak_type=True)
  assert _abstract(out['a'].get_value())


def _pair():
  v = nnx.Param(jnp.ones(2))
  return v, v


def test_graph_updates_false_keeps_shared_outputs():
  a, b = nnx.eval_shape(_pair, graph_updates=False)
  assert a is b


@pytest.mark.parametrize(
  'transform',
  [
    lambda f: nnx.eval_shape(f, graph=False),
    lambda f: nnx.jit(f, graph=False)(),
    lambda f: nnx.vmap(lambda x: (lambda v: (v, v))(nnx.Param(x)), graph=False)(
      jnp.ones((2, 3))
    ),
  ],
  ids=['eval_shape', 'jit', 'vmap'],
)
def test_tree_mode_refuses_a_variable_returned_twice(transform):
  with pytest.raises(ValueError, match='Duplicate') as info:
    transform(_pair)
  assert 'does not support Variable aliasing' in str(info.value)
  assert '.out[0]' in str(info.value) and '.out[1]' in str(info.value)


def test_jit_still_refuses_captured_variables():
  param = nnx.Param(jnp.ones(2))
  with pytest.raises(ValueError, match='different trace level'):
    nnx.jit(lambda: param)()
