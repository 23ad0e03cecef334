"""Tests of LogicallyPartitioned, logical constraints and backends."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from flax import plugins
from flax import spmd
from flax.core import meta
from flax.core import state_dict
from flax.spmd import _backends
from flax.spmd import _logical


def test_doctests():
  assert doctest.testmod(_logical).failed == 0
  assert doctest.testmod(_backends).failed == 0


def test_reexports_of_core_meta():
  assert spmd.Partitioned is meta.Partitioned
  assert spmd.with_partitioning is meta.with_partitioning
  assert spmd.get_partition_spec is meta.get_partition_spec
  assert spmd.get_sharding is meta.get_sharding
  assert spmd.PARTITION_NAME == 'partition_name'


def test_with_logical_partitioning_and_repr():
  init = spmd.with_logical_partitioning(
    jax.nn.initializers.xavier_normal(), ('embed', 'hidden')
  )
  key = jax.random.key(1)
  box = init(key, (4, 6))
  assert isinstance(box, spmd.LogicallyPartitioned)
  assert isinstance(box, meta.Partitioned)
  expected = jax.nn.initializers.xavier_normal()(key, (4, 6))
  np.testing.assert_array_equal(box.value, expected)
  shapes = jax.tree_util.tree_map(jnp.shape, box)
  assert repr(shapes) == (
    "LogicallyPartitioned(value=(4, 6), names=('embed', 'hidden'), "
    'mesh=None, rules=None)'
  )
  rules = (('embed', 'data'),)
  assert (
    spmd.with_logical_partitioning(jnp.zeros, ('embed',), rules=rules)(
      (2,)
    ).rules
    == rules
  )


def test_logical_partition_spec_and_axis_metadata():
  box = spmd.LogicallyPartitioned(jnp.zeros((2, 3)), ('embed', 'hidden'))
  assert spmd.get_partition_spec({'w': box}) == {'w': P('embed', 'hidden')}
  added = box.add_axis(0, {spmd.PARTITION_NAME: 'layer'})
  assert isinstance(added, spmd.LogicallyPartitioned)
  assert added.names == ('layer', 'embed', 'hidden')
  assert spmd.logical_to_mesh(
    spmd.get_partition_spec(added), (('hidden', 'model'),)
  ) == P(None, None, 'model')


def test_unbox_without_mesh_is_the_value():
  value = jnp.ones((2, 3))
  box = spmd.LogicallyPartitioned(value, ('embed', 'hidden'))
  assert box.unbox() is value
  assert meta.unbox({'w': box})['w'] is value


def test_state_dict_holds_value_only():
  box = spmd.LogicallyPartitioned(np.ones(2), ('embed',), rules=(('a', 'b'),))
  assert state_dict.to_state_dict(box) == {'value': box.value}
  restored = state_dict.from_state_dict(box, {'value': np.zeros(2)})
  assert restored.rules == (('a', 'b'),) and restored.names == ('embed',)


def test_with_logical_constraint_without_mesh_is_identity():
  x = jnp.ones((4, 2))
  assert spmd.with_logical_constraint(x, ('batch', 'embed')) is x
  tree = {'a': x, 'b': x}
  out = spmd.with_logical_constraint(tree, {'a': ('batch', None), 'b': None})
  assert out['a'] is x and out['b'] is x


def test_fallbacks():
  x = jnp.ones((4, 2))
  rules = (('batch', 'data'),)
  with pytest.raises(ValueError) as info:
    spmd.with_logical_constraint(
      x,
      ('batch', 'embed'),
      rules=rules,
      fallback=spmd.RulesFallback.RAISE_ERROR,
    )
  assert str(info.value) == "Axis names ('batch', 'embed') did not match a rule"
  out = spmd.with_logical_constraint(
    x, ('batch', 'embed'), rules=rules, fallback='no_constraint'
  )
  assert out is x
  assert spmd.RulesFallback('axis_is_unsharded') is (
    spmd.RulesFallback.AXIS_IS_UNSHARDED
  )


def test_constraint_with_explicit_mesh_shards():
  mesh = jax.make_mesh(
    (1, 1), ('data', 'model'), axis_types=(jax.sharding.AxisType.Auto,) * 2
  )
  x = jnp.ones((4, 2))
  y = spmd.with_logical_constraint(
    x, ('batch', 'embed'), rules=(('batch', 'data'),), mesh=mesh
  )
  assert y.sharding.spec == P('data', None)


def test_partitioning_backends_are_registered():
  assert plugins.backend_names('partitioning')[:2] == ['jax', 'none']
  assert spmd.current_backend() is _backends.JAX
  with plugins.use_backend('partitioning', 'none'):
    assert spmd.current_backend() is _backends.NONE


def test_none_backend_disables_constraints():
  mesh = jax.make_mesh(
    (1, 1), ('data', 'model'), axis_types=(jax.sharding.AxisType.Auto,) * 2
  )
  x = jnp.ones((4, 2))
  with plugins.use_backend('partitioning', 'none'):
    y = spmd.with_logical_constraint(
      x, ('batch', None), rules=(('batch', 'data'),), mesh=mesh
    )
  assert y is x
  with plugins.use_backend('partitioning', 'none'):
    assert _backends.NONE.context_mesh() is None


def test_linen_exports_are_declared():
  from flax._plugins import spmd as plugin

  exports = {e.name: e.target for e in plugin.flax_exports()}
  for name in (
    'with_logical_partitioning',
    'LogicallyPartitioned',
    'with_logical_constraint',
    'logical_axis_rules',
    'set_logical_axis_rules',
    'get_logical_axis_rules',
    'logical_to_mesh_axes',
    'logical_to_mesh',
    'logical_to_mesh_sharding',
  ):
    assert plugins.load_target(exports[name]) is getattr(spmd, name)
  assert plugins.load_target(exports['spmd']) is spmd
  others = [e for e in plugin.flax_exports() if e.namespace != 'flax.linen']
  assert [(e.namespace, e.name) for e in others] == [('flax', 'spmd')]
  reg = plugins.registry()
  assert reg.export('flax.linen', 'logical_to_mesh_axes') is not None
