"""flax.linen.partitioning (flax.spmd.linen): T5X-style logical axes."""

import doctest
import importlib

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P

import flax
from flax import linen as nn
from flax import traverse_util
from flax.core import spmd as core_spmd
from flax.linen import partitioning as nnp
from flax.spmd import linen as spmd_linen


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def test_doctests():
  assert doctest.testmod(spmd_linen).failed == 0


def test_module_path_and_aliases():
  # The Flax path is the flax-spmd module itself, however it is reached.
  assert nnp is spmd_linen is importlib.import_module('flax.linen.partitioning')
  assert nn.partitioning is nnp
  assert nnp.with_sharding_constraint is nn.with_logical_constraint
  assert nnp.logical_to_mesh is nn.logical_to_mesh
  assert nnp.RulesFallback is nn.spmd.RulesFallback
  assert nnp.flatten_dict is traverse_util.flatten_dict
  assert nnp.ScanIn is flax.typing.In and nnp.ScanOut is flax.typing.Out
  assert nnp.axis_rules is core_spmd.logical_axis_rules
  assert nnp.get_axis_rules is core_spmd.get_logical_axis_rules
  assert nnp.set_axis_rules is core_spmd.set_logical_axis_rules
  with nnp.axis_rules([('a', 'b')]):
    assert nnp.get_axis_rules() == [('a', 'b')]
    assert nn.get_logical_axis_rules() == [('a', 'b')]


def test_axis_metadata_and_get_axis_names():
  meta = nnp.AxisMetadata(('x',))
  assert repr(meta) == "AxisMetadata(names=('x',))"
  assert meta == nnp.AxisMetadata(('x',))
  assert hash(meta) == hash(nnp.AxisMetadata(('x',)))
  assert jax.tree_util.tree_leaves(meta) == []
  assert nn.unbox({'x': meta}) == {'x': meta}
  names = nnp.get_axis_names(
    {'a': {'k_axes': nnp.AxisMetadata(('x',)), 'j': nnp.AxisMetadata(('y',))}}
  )
  assert names == flax.core.freeze({'a': {'k': P('x'), 'j': P('y')}})
  with pytest.raises(AttributeError, match='names'):
    nnp.get_axis_names({'a': 1})


def test_param_and_variable_with_axes():
  seen = []

  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      k = nnp.param_with_axes(
        'kernel', jax.nn.initializers.ones, (2,), axes=('embed',)
      )
      # The number of names is not checked.
      nnp.param_with_axes(
        'kernel2', jax.nn.initializers.ones, (2, 3), axes=('embed',)
      )
      nnp.param_with_axes('bias', jax.nn.initializers.zeros, (2,))
      v = nnp.variable_with_axes('cache', 'c', jnp.zeros, (2,), axes=('mlp',))
      seen.append((type(v).__name__, v.axes, v.fallback, v.value.tolist()))
      v.value = v.value + 1
      return x * k

  v = M().init(jax.random.key(0), jnp.ones(2))
  assert seen == [
    (
      'PartitionedVariable',
      ('mlp',),
      nnp.RulesFallback.AXIS_IS_UNSHARDED,
      [0.0, 0.0],
    )
  ]
  assert shapes(v) == {
    'cache': {'c': (2,)},
    'cache_axes': {'c_axes': nnp.AxisMetadata(names=('mlp',))},
    'params': {'bias': (2,), 'kernel': (2,), 'kernel2': (2, 3)},
    'params_axes': {
      'kernel2_axes': nnp.AxisMetadata(names=('embed',)),
      'kernel_axes': nnp.AxisMetadata(names=('embed',)),
    },
  }
  # Without a mutable axes collection nothing is recorded.
  y, state = M().apply(
    {'params': v['params'], 'cache': v['cache']}, jnp.ones(2), mutable='cache'
  )
  assert list(state) == ['cache']
  with pytest.raises(AssertionError):
    nnp.param_with_axes('x', jax.nn.initializers.ones, (2,))


class Layer(nn.Module):
  @nn.compact
  def __call__(self, x, _):
    n = x.shape[-1]
    k = nnp.param_with_axes(
      'kernel', jax.nn.initializers.ones, (n, n), axes=('embed', 'mlp')
    )
    nnp.variable_with_axes('cache', 'c', jnp.zeros, (2,), axes=('heads',))
    return x @ k, None


class Layer2(nn.Module):
  @nn.compact
  def __call__(self, x, _):
    n = x.shape[-1]
    k = nnp.param_with_axes(
      'kernel', jax.nn.initializers.ones, (n, n), axes=('embed', 'mlp')
    )
    return x @ k, None


def test_scan_and_vmap_with_axes():
  scan_cls = nnp.scan_with_axes(
    Layer,
    variable_axes={'params': 0, 'cache': 1},
    split_rngs={'params': True},
    length=3,
    axes_collections=('params', 'cache'),
  )
  vmap_cls = nnp.vmap_with_axes(
    Layer2,
    variable_axes={'params': 1},
    split_rngs={'params': True},
    partitioning_axis_names={'params': 'heads'},
    in_axes=(0, None),
  )
  assert scan_cls.__name__ == 'Map_variablesMap_variablesScanLayer'
  assert vmap_cls.__name__ == 'Map_variablesVmapLayer2'

  class M(nn.Module):
    @nn.compact
    def __call__(self, x):
      y, _ = scan_cls()(x, None)
      y2, _ = vmap_cls()(jnp.stack([x, x]), None)
      return y, y2

  s_name = 'Map_variablesMap_variablesScanLayer_0'
  v_name = 'Map_variablesVmapLayer2_0'
  v = M().init(jax.random.key(0), jnp.ones((2, 4)))
  assert shapes(v) == {
    'cache': {s_name: {'c': (2, 3)}},
    'cache_axes': {
      s_name: {'c_axes': nnp.AxisMetadata(names=('heads', 'layers'))}
    },
    'params': {s_name: {'kernel': (3, 4, 4)}, v_name: {'kernel': (4, 2, 4)}},
    'params_axes': {
      s_name: {'kernel_axes': nnp.AxisMetadata(('layers', 'embed', 'mlp'))},
      v_name: {'kernel_axes': nnp.AxisMetadata(('embed', 'heads', 'mlp'))},
    },
  }
  # Given axes go in without the added name and come out with it.
  _, state = M().apply(
    {'params': v['params'], 'params_axes': v['params_axes']},
    jnp.ones((2, 4)),
    mutable=['cache', 'cache_axes'],
  )
  assert shapes(state) == {
    'cache': {s_name: {'c': (2, 3)}},
    'cache_axes': {
      s_name: {'c_axes': nnp.AxisMetadata(names=('heads', 'layers'))}
    },
  }
  y, y2 = M().apply(
    {'params': v['params'], 'cache': v['cache']}, jnp.ones((2, 4))
  )
  assert y.shape == (2, 4) and y2.shape == (2, 2, 4)
  assert float(y[0, 0]) == 64.0


def test_remat_with_static_argnums():
  seen = []

  class L(nn.Module):
    @nn.compact
    def __call__(self, x, flag):
      seen.append(type(flag).__name__)
      k = nnp.param_with_axes(
        'k', jax.nn.initializers.ones, (2,), axes=('embed',)
      )
      return x * k if flag else x

  r_cls = nnp.remat(L, static_argnums=(1,))
  assert r_cls.__name__ == 'Core_remat_staticL'
  v = r_cls().init(jax.random.key(0), jnp.ones(2), True)
  assert seen == ['bool']
  assert shapes(v) == {
    'params': {'k': (2,)},
    'params_axes': {'k_axes': nnp.AxisMetadata(names=('embed',))},
  }
  # Out-of-range static argnums are ignored: the flag is traced.
  with pytest.raises(jax.errors.TracerBoolConversionError):
    nnp.remat(L, static_argnums=(2,))().init(
      jax.random.key(0), jnp.ones(2), True
    )


def test_core_remat_static():
  from flax.core import init

  seen = []

  def f(scope, x, flag):
    seen.append(flag)
    return x * 2 if flag else x

  g = nnp.core_remat_static(f, static_argnums=(1,))
  y, _ = init(g)(jax.random.key(0), jnp.ones(2), True)
  assert seen == [True] and y.tolist() == [2.0, 2.0]
