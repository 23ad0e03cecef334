"""Tests of flax.core.meta (axis metadata boxes)."""

import doctest
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from flax import core
from flax import errors
from flax import struct
from flax.core import meta
from flax.core import state_dict


def test_doctests():
  assert doctest.testmod(meta).failed == 0


def test_names_in_flax_core():
  for name in (
    'AxisMetadata',
    'Partitioned',
    'with_partitioning',
    'unbox',
    'map_axis_meta',
    'add_axis',
    'remove_axis',
    'PARTITION_NAME',
    'get_partition_spec',
    'get_sharding',
  ):
    assert getattr(core, name) is getattr(meta, name)
  assert meta.PARTITION_NAME == 'partition_name'
  assert meta.Partitioned.__module__ == 'flax.core.meta'


def test_partitioned_is_a_pytree_box():
  box = meta.Partitioned(jnp.ones((4, 8)), (None, 'data'))
  leaves, treedef = jax.tree_util.tree_flatten(box)
  assert len(leaves) == 1 and leaves[0].shape == (4, 8)
  shapes = jax.tree_util.tree_map(np.shape, {'kernel': box})
  assert repr(shapes['kernel']) == (
    "Partitioned(value=(4, 8), names=(None, 'data'), mesh=None)"
  )
  doubled = jax.tree_util.tree_map(lambda x: x * 2, box)
  assert isinstance(doubled, meta.Partitioned)
  assert doubled.names == (None, 'data')
  np.testing.assert_array_equal(doubled.value, 2 * np.ones((4, 8)))


def test_boxes_flow_through_jit_and_grad():
  box = meta.Partitioned(jnp.array([1.0, 2.0]), ('model',))
  grads = jax.jit(jax.grad(lambda b: jnp.sum(b.value**2)))(box)
  assert isinstance(grads, meta.Partitioned) and grads.names == ('model',)
  np.testing.assert_allclose(grads.value, [2.0, 4.0])


def test_with_partitioning_wraps_initializer():
  init = meta.with_partitioning(
    jax.nn.initializers.lecun_normal(), (None, 'data')
  )
  key = jax.random.key(0)
  box = init(key, (4, 8), jnp.float32)
  assert isinstance(box, meta.Partitioned)
  assert box.names == (None, 'data') and box.mesh is None
  expected = jax.nn.initializers.lecun_normal()(key, (4, 8), jnp.float32)
  np.testing.assert_array_equal(box.value, expected)
  mesh = jax.make_mesh((1,), ('data',))
  assert meta.with_partitioning(jnp.zeros, ('data',), mesh)((2,)).mesh is mesh


def test_add_and_remove_axis():
  box = meta.Partitioned(jnp.zeros((2, 3)), ('a', 'b'))
  params = {meta.PARTITION_NAME: 'layers'}
  assert box.add_axis(0, params).names == ('layers', 'a', 'b')
  assert box.add_axis(1, params).names == ('a', 'layers', 'b')
  assert box.add_axis(4, params).names == ('a', 'b', None, None, 'layers')
  assert box.add_axis(0, params).remove_axis(0, params).names == ('a', 'b')
  assert box.add_axis(0, {meta.PARTITION_NAME: None}).names == (
    None,
    'a',
    'b',
  )
  with pytest.raises(errors.PartitioningUnspecifiedError):
    box.add_axis(0, {})
  with pytest.raises(ValueError, match="axis named 'layers'"):
    box.remove_axis(0, params)


def test_tree_helpers():
  tree = {
    'k': meta.Partitioned(jnp.zeros((2,)), ('a',)),
    'b': jnp.ones(3),
  }
  params = {meta.PARTITION_NAME: 'x'}
  added = meta.add_axis(tree, 0, params)
  assert added['k'].names == ('x', 'a')
  assert added['b'] is tree['b']
  assert meta.remove_axis(added, 0, params)['k'].names == ('a',)
  unboxed = meta.unbox(tree)
  assert not meta.is_axis_metadata(unboxed['k'])
  assert meta.is_axis_metadata(tree['k'])
  names = meta.map_axis_meta(lambda box: box.names, tree)
  assert names['k'] == ('a',)
  replaced = meta.replace_boxed(tree, {'k': jnp.full(2, 7.0), 'b': 5})
  assert isinstance(replaced['k'], meta.Partitioned)
  np.testing.assert_array_equal(replaced['k'].value, [7.0, 7.0])
  assert replaced['b'] == 5


def test_get_partition_spec_and_sharding():
  variables = {
    'params': {
      'kernel': meta.Partitioned(jnp.zeros((4, 8)), (None, 'data')),
      'bias': jnp.zeros(8),
      'abstract': jax.ShapeDtypeStruct((3,), jnp.float32),
    },
    'meta': {'step': 3},
  }
  spec = meta.get_partition_spec(variables)
  assert spec['params']['kernel'] == P(None, 'data')
  assert spec['params']['bias'] == P()
  assert spec['params']['abstract'] == P()
  assert spec['meta']['step'] is None
  mesh = jax.make_mesh((1,), ('data',))
  shardings = meta.get_sharding(variables, mesh)
  assert shardings['params']['kernel'] == NamedSharding(mesh, P(None, 'data'))
  assert shardings['params']['bias'] == NamedSharding(mesh, P())
  assert shardings['meta'] == {'step': None}


def test_partition_spec_of_eval_shape():
  init = meta.with_partitioning(jax.nn.initializers.ones, ('model',))
  abstract = jax.eval_shape(lambda k: {'w': init(k, (4,))}, jax.random.key(0))
  assert meta.get_partition_spec(abstract) == {'w': P('model')}


def test_unbox_without_mesh_returns_value():
  value = jnp.ones((2, 4))
  box = meta.Partitioned(value, (None, 'model'))
  assert box.unbox() is value
  assert box.unbox(apply_constraint=False) is value
  assert box.get_value() is value


def test_unbox_with_box_mesh_applies_constraint():
  mesh = jax.make_mesh(
    (1, 1), ('data', 'model'), axis_types=(AxisType.Auto,) * 2
  )
  box = meta.Partitioned(jnp.ones((2, 4)), (None, 'model'), mesh=mesh)
  out = box.unbox()
  assert out.sharding == NamedSharding(mesh, P(None, 'model'))
  assert meta.unbox({'w': box})['w'].sharding.spec == P(None, 'model')
  assert box.get_sharding(mesh) == NamedSharding(mesh, P(None, 'model'))


def test_unbox_with_context_mesh_applies_constraint():
  mesh = jax.make_mesh((1, 1), ('data', 'model'))  # Explicit axes.
  box = meta.Partitioned(jnp.ones((2, 4)), (None, 'model'))
  with jax.set_mesh(mesh):
    assert meta.get_global_mesh() is not None
    assert box.unbox().sharding.spec == P(None, 'model')
    jitted = jax.jit(lambda b: b.unbox())(box)
    assert jitted.sharding.spec == P(None, 'model')
  assert meta.get_global_mesh() is None


def test_state_dict_of_partitioned():
  box = meta.Partitioned(np.ones(2), ('a',))
  assert state_dict.to_state_dict({'w': box}) == {'w': {'value': box.value}}
  restored = state_dict.from_state_dict(box, {'value': np.zeros(2)})
  assert isinstance(restored, meta.Partitioned) and restored.names == ('a',)
  np.testing.assert_array_equal(restored.value, np.zeros(2))


def test_custom_axis_metadata_subclass():
  class Tagged(struct.PyTreeNode, meta.AxisMetadata):
    value: Any
    axes: tuple = struct.field(pytree_node=False, default=())

    def unbox(self):
      return self.value

    def replace_boxed(self, val):
      return self.replace(value=val)

    def add_axis(self, index, params):
      axes = list(self.axes)
      axes.insert(index, params['tag'])
      return self.replace(axes=tuple(axes))

    def remove_axis(self, index, params):
      axes = list(self.axes)
      axes.pop(index)
      return self.replace(axes=tuple(axes))

  tree = {'x': Tagged(1.0, ('a',))}
  assert meta.add_axis(tree, 0, {'tag': 't'})['x'].axes == ('t', 'a')
  assert meta.unbox(tree) == {'x': 1.0}
  with pytest.raises(TypeError):

    class Incomplete(meta.AxisMetadata):
      pass

    Incomplete()
