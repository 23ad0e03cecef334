"""with_logical_constraint goes through flax.linen.spmd._with_sharding_constraint.

Tests (and users) patch that function to see which constraints a model asks
for; the calls below are the ones Flax 0.12.8 makes.
"""

from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from flax import linen as nn
from flax.linen import partitioning
from flax.linen import spmd as linen_spmd


@pytest.fixture
def mesh():
  devices = np.array(jax.devices()[:8]).reshape(2, 4)
  return jax.sharding.Mesh(devices, ('a', 'b'))


def calls(fn):
  with mock.patch.object(
    linen_spmd, '_with_sharding_constraint', side_effect=lambda x, *a, **k: x
  ) as wsc:
    fn()
  return [(c.args[1:], c.kwargs) for c in wsc.call_args_list]


X = jnp.ones((2, 2))


def test_no_rules_no_call():
  assert calls(lambda: nn.with_logical_constraint(X, ('batch', None))) == []


def test_rules_without_mesh_call_with_mesh_none():
  def fn():
    with nn.logical_axis_rules([('batch', 'a')]):
      nn.with_logical_constraint(X, ('batch', None))

  assert calls(fn) == [((P('a', None),), {'mesh': None})]


def test_explicit_mesh_is_passed(mesh):
  def fn():
    with nn.logical_axis_rules([('batch', 'a')]):
      nn.with_logical_constraint(X, ('batch', None), mesh=mesh)

  assert calls(fn) == [((P('a', None),), {'mesh': mesh})]


def test_fallbacks():
  def unsharded():
    with nn.logical_axis_rules([('batch', 'a')]):
      nn.with_logical_constraint(X, ('foo', None))

  def no_constraint():
    with nn.logical_axis_rules([('batch', 'a')]):
      nn.with_logical_constraint(
        X, ('foo', None), fallback=nn.spmd.RulesFallback.NO_CONSTRAINT
      )

  def raise_error():
    with nn.logical_axis_rules([('batch', 'a')]):
      nn.with_logical_constraint(
        X, ('foo', None), fallback=nn.spmd.RulesFallback.RAISE_ERROR
      )

  assert calls(unsharded) == [((P(None, None),), {'mesh': None})]
  assert calls(no_constraint) == []
  with pytest.raises(ValueError, match='did not match a rule'):
    calls(raise_error)


def test_tree_and_none_names():
  def tree():
    with nn.logical_axis_rules([('batch', 'a')]):
      nn.with_logical_constraint(
        {'p': X, 'q': X}, {'p': ('batch', None), 'q': None}
      )

  def top_none():
    with nn.logical_axis_rules([('batch', 'a')]):
      nn.with_logical_constraint(X, None)

  assert calls(tree) == [
    ((P('a', None),), {'mesh': None}),
    ((None,), {'mesh': None}),
  ]
  assert calls(top_none) == []


def test_partitioning_alias_and_unbox(mesh):
  def alias():
    with nn.logical_axis_rules([('batch', 'a')]):
      partitioning.with_sharding_constraint(X, P('a'))

  def unbox():
    box = nn.LogicallyPartitioned(
      X, ('batch', None), mesh=mesh, rules=(('batch', 'b'),)
    )
    with nn.logical_axis_rules([('batch', 'a')]):
      box.unbox()

  assert calls(alias) == [((P(None),), {'mesh': None})]
  assert calls(unbox) == [((P('b', None),), {'mesh': mesh})]


def test_one_fallback_and_real_constraint(mesh):
  rules = (('batch', 'a'),)
  fallback = linen_spmd.RulesFallback
  y = linen_spmd._with_sharding_constraint_one_fallback(
    ('foo', None), X, fallback.NO_CONSTRAINT, rules, mesh
  )
  assert y is X
  with pytest.raises(ValueError, match='did not match a rule'):
    linen_spmd._with_sharding_constraint_one_fallback(
      ('foo', None), X, fallback.RAISE_ERROR, rules, mesh
    )
  out = jax.jit(
    lambda x: linen_spmd._with_sharding_constraint(x, P('a'), mesh=mesh)
  )(X)
  assert out.sharding.spec == P('a')
  np.testing.assert_array_equal(
    linen_spmd._with_sharding_constraint(X, P('a')), X
  )


def test_unconstrained_logical_names():
  unc = P.UNCONSTRAINED

  def run():
    with nn.logical_axis_rules([('batch', 'a')]):
      partitioning.with_sharding_constraint(X, ('batch', unc))
      partitioning.with_sharding_constraint({'p': X}, {'p': (unc, 'batch')})

  assert calls(run) == [
    ((P('a', unc),), {'mesh': None}),
    ((P(unc, 'a'),), {'mesh': None}),
  ]


def test_axes_helpers_constrain_params_and_initial_values():
  assert partitioning._with_sharding_constraint is (
    linen_spmd._with_sharding_constraint
  )

  class Model(nn.Module):
    fallback: partitioning.RulesFallback = (
      partitioning.RulesFallback.AXIS_IS_UNSHARDED
    )

    @nn.compact
    def __call__(self, x):
      partitioning.variable_with_axes(
        'stats',
        'v',
        jnp.zeros,
        (2, 2),
        axes=('foo', 'batch'),
        fallback=self.fallback,
      )
      return partitioning.param_with_axes(
        'w', jax.nn.initializers.ones, (2, 2), axes=('batch', None)
      )

  rules = [('batch', 'a')]

  def init(fallback):
    def run():
      with nn.logical_axis_rules(rules):
        Model(fallback).init(jax.random.key(0), X)

    return run

  def apply():
    with nn.logical_axis_rules(rules):
      variables = Model().init(jax.random.key(0), X)
    with nn.logical_axis_rules(rules):
      Model().apply(variables, X)

  fallback = partitioning.RulesFallback
  # The variable's initial value (only when created), then the parameter's
  # value (at every call).
  assert calls(init(fallback.AXIS_IS_UNSHARDED)) == [
    ((P(None, 'a'),), {'mesh': None}),
    ((P('a', None),), {'mesh': None}),
  ]
  assert calls(init(fallback.NO_CONSTRAINT)) == [
    ((P('a', None),), {'mesh': None}),
  ]
  assert len(calls(apply)) == 3
