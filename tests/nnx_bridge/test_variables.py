"""flax.nnx.bridge.variables: Linen collections <-> NNX Variables."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax import linen as nn
from flax.core import meta
from flax.nnx import bridge
from flax.nnx.bridge import variables as bv


@pytest.fixture
def no_eager_sharding():
  # Variables with sharding metadata are placed on creation (eager
  # sharding) and need a mesh; these tests only look at the metadata.
  with nnx.use_eager_sharding(False):
    yield


X = jnp.ones(2)


def test_collection_names_map_to_variable_types():
  assert type(bv.to_nnx_var('params', X)) is nnx.Param
  assert type(bv.to_nnx_var('batch_stats', X)) is nnx.BatchStat
  assert type(bv.to_nnx_var('cache', X)) is nnx.Cache
  assert type(bv.to_nnx_var('intermediates', X)) is nnx.Intermediate
  new = bv.to_nnx_var('bridge_test_new_col', X)
  assert type(new).__name__ == 'bridge_test_new_col'
  assert isinstance(new, nnx.Variable)
  assert nnx.variable_name_from_type(type(new)) == 'bridge_test_new_col'
  assert type(bv.to_nnx_var('bridge_test_new_col', X)) is type(new)


def test_registered_name_round_trips_through_to_linen():
  @nnx.register_variable_name('bridge_test_stats')
  class MyStat(nnx.Variable):
    pass

  class WithStat(nnx.Module):
    def __init__(self, rngs):
      self.s = MyStat(jnp.zeros(2))

    def __call__(self, x):
      self.s[...] += x
      return x

  model = bridge.to_linen(WithStat)
  variables = model.init(jax.random.key(0), X)
  assert list(variables) == ['bridge_test_stats']
  _, updates = model.apply(variables, X, mutable=['bridge_test_stats'])
  np.testing.assert_allclose(updates['bridge_test_stats']['s'], [1.0, 1.0])
  assert type(bv.to_nnx_var('bridge_test_stats', X)) is MyStat


def test_vanilla_variables_become_bare_values():
  assert bv.is_vanilla_variable(nnx.Param(X))
  assert bv.is_vanilla_variable(nnx.BatchStat(X))
  assert not bv.is_vanilla_variable(nnx.Param(X, a=1))
  out = bv.to_linen_var(nnx.Param(X))
  assert not isinstance(out, meta.AxisMetadata)
  np.testing.assert_allclose(out, X)


def test_metadata_goes_into_nnxmeta_and_back():
  box = bv.to_linen_var(nnx.Param(X, a=1))
  assert isinstance(box, bv.NNXMeta)
  assert box.var_type is nnx.Param
  assert box.metadata['a'] == 1
  var = bv.to_nnx_var('params', box)
  assert type(var) is nnx.Param
  assert var.get_metadata('a') == 1
  box = bv.NNXMeta(nnx.BatchStat, X, {'b': 2})
  var = bv.to_nnx_var('batch_stats', box)
  assert type(var) is nnx.BatchStat and var.b == 2
  with pytest.raises(ValueError, match='BatchStat'):
    bv.to_nnx_var('params', box)


@pytest.mark.usefixtures('no_eager_sharding')
def test_partitioned_round_trip():
  var = bv.to_nnx_var('params', meta.Partitioned(X, ('a',)))
  assert type(var) is nnx.Param
  assert var.get_metadata('out_sharding') == ('a',)
  assert var.get_metadata('mesh') is None
  assert var.get_metadata('linen_meta_type') is meta.Partitioned
  back = bv.to_linen_var(var)
  assert type(back) is meta.Partitioned
  assert back.names == ('a',)
  np.testing.assert_allclose(back.value, X)


def test_nnxmeta_box():
  box = bv.NNXMeta(nnx.Param, X, {'out_sharding': ('a',)})
  assert isinstance(box, meta.AxisMetadata)
  np.testing.assert_allclose(box.unbox(), X)
  assert box.replace_boxed(3).value == 3
  assert box.replace_boxed(3).metadata == box.metadata
  assert box.add_axis(0, {'partition_name': 'p'}) is box
  assert box.remove_axis(0, {'partition_name': 'p'}) is box
  assert box.get_partition_spec() == jax.sharding.PartitionSpec('a')
  # No sharding names: replicated.
  assert bv.NNXMeta(nnx.Param, X, {}).get_partition_spec() == (
    jax.sharding.PartitionSpec()
  )
  leaves, treedef = jax.tree.flatten(box)
  assert len(leaves) == 1
  doubled = jax.tree.unflatten(treedef, [leaves[0] * 2])
  assert type(doubled) is bv.NNXMeta
  np.testing.assert_allclose(doubled.value, 2 * X)
  unboxed = nn.unbox({'params': {'k': box}})
  np.testing.assert_allclose(unboxed['params']['k'], X)
  assert bv.NNXMeta(nnx.Param, X, {'c': 3}).to_nnx_variable().c == 3


def test_get_col_name():
  path = (jax.tree_util.DictKey('params'), jax.tree_util.DictKey('k'))
  assert bv.get_col_name(path) == 'params'
  assert bv.get_col_name((jax.tree_util.GetAttrKey('cache'),)) == 'cache'
  with pytest.raises(ValueError):
    bv.get_col_name(())


def test_sort_variable_types_puts_subclasses_first():
  got = bv.sort_variable_types(
    [nnx.Intermediate, nnx.Perturbation, nnx.Variable, nnx.Param]
  )
  assert got == [nnx.Perturbation, nnx.Intermediate, nnx.Param, nnx.Variable]
  got = bv.sort_variable_types([nnx.Variable, nnx.Param, nnx.BatchStat])
  assert got == [nnx.Param, nnx.BatchStat, nnx.Variable]


def test_linen_vars_to_nnx_attrs_and_back():
  linen_vars = {
    'params': {'a': {'k': X}, 'b': X},
    'batch_stats': {'a': {'m': X}},
  }
  attrs = bv.linen_vars_to_nnx_attrs(linen_vars)
  assert list(attrs) == ['a', 'b']
  assert list(attrs['a']) == ['m', 'k']
  assert type(attrs['a']['k']) is nnx.Param
  assert type(attrs['a']['m']) is nnx.BatchStat
  back = bv.nnx_attrs_to_linen_vars(attrs)
  assert list(back) == ['batch_stats', 'params']
  assert list(bv.linen_vars_to_nnx_attrs({'params': {'z': X, 'a': X}})) == [
    'a',
    'z',
  ]
  order = bv.nnx_attrs_to_linen_vars({'z': nnx.BatchStat(X), 'a': nnx.Param(X)})
  assert list(order) == ['batch_stats', 'params']
  assert jax.tree.structure(back) == jax.tree.structure(
    {'batch_stats': {'a': {'m': 0}}, 'params': {'a': {'k': 0}, 'b': 0}}
  )
  with pytest.raises(ValueError, match='Variable'):
    bv.nnx_attrs_to_linen_vars({'a': X})


@pytest.mark.usefixtures('no_eager_sharding')
def test_bridge_with_partitioning():
  init = bridge.with_partitioning(nn.initializers.ones, ('a', 'b'))
  boxed = init(jax.random.key(0), (2, 3))
  assert boxed.metadata == {
    'out_sharding': ('a', 'b'),
    'mesh': None,
    'linen_meta_type': meta.Partitioned,
  }
  np.testing.assert_allclose(boxed.raw_value, np.ones((2, 3)))
  var = nnx.Param(boxed)
  assert var.get_metadata('out_sharding') == ('a', 'b')
  assert type(bv.to_linen_var(var)) is meta.Partitioned
