"""VariableMeta, the metaclass of every Variable type (as in Flax 0.12.8):
subclasses are registered as pytrees and their value hooks detected when
the class is created."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from flax.nnx import variablelib


def test_metaclass_of_variable_types():
  assert type(nnx.Variable) is variablelib.VariableMeta
  assert type(nnx.Param) is variablelib.VariableMeta
  assert variablelib.VariableMeta.__bases__ == (type,)

  class Count(nnx.Variable):
    pass

  assert type(Count) is variablelib.VariableMeta
  assert isinstance(Count(1), nnx.Variable) and not issubclass(Count, nnx.Param)


def test_subclass_is_a_pytree():
  class Stat(nnx.BatchStat):
    pass

  s = Stat(jnp.ones(2), tag='x')
  leaves, treedef = jax.tree.flatten(s)
  assert len(leaves) == 1
  back = jax.tree.unflatten(treedef, [jnp.zeros(2)])
  assert type(back) is Stat and back.tag == 'x'
  assert back[...].tolist() == [0.0, 0.0]


def test_subclass_hooks_detected():
  class Doubled(nnx.Variable):
    def on_get_value(self, value):
      return value * 2

  with pytest.warns(UserWarning, match='hooks are deprecated'):
    d = Doubled(jnp.ones(1))
  assert d[...].tolist() == [2.0]
  assert Doubled._has_get_hook and not Doubled._has_set_hook
  assert not nnx.Param._has_hook_methods


def test_eager_sharding_and_ref_from_the_value_metadata():
  # nnx.with_metadata(init, eager_sharding=False): no mesh needed for the
  # sharding names, as with the keyword
  init = nnx.with_metadata(
    lambda key, shape: jnp.ones(shape),
    out_sharding=(None, 'm'),
    eager_sharding=False,
  )
  p = nnx.Param(init(jax.random.key(0), (2, 2)))
  assert p.get_metadata('eager_sharding') is False
  assert p.get_metadata('out_sharding') == (None, 'm')
  assert p[...].tolist() == [[1.0, 1.0], [1.0, 1.0]]
  q = nnx.Param(
    nnx.with_metadata(lambda key, shape: jnp.zeros(shape), ref=True)(
      jax.random.key(0), (2,)
    )
  )
  assert q.get_metadata('ref') is True
