"""Tests of logical axis rules and logical_to_mesh*."""

import doctest
import threading

import jax
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from flax import spmd
from flax.spmd import _rules


def test_doctests():
  assert doctest.testmod(_rules).failed == 0
  assert doctest.testmod(spmd).failed == 0


def test_logical_to_mesh_axes_doc_example():
  rules = (('batch', 'X'), ('features', 'X'), ('heads', 'Y'), ('batch', 'Z'))
  spec = spmd.logical_to_mesh_axes(
    ('batch', 'length', 'heads', 'features'), rules
  )
  assert spec == P('X', None, 'Y', None)


def test_first_matching_rule_wins_and_mesh_axes_are_used_once():
  rules = (('embed', 'model'), ('mlp', 'model'), ('mlp', 'data'))
  assert spmd.logical_to_mesh_axes(('embed', 'mlp'), rules) == P(
    'model', 'data'
  )
  rules = (('batch', ('data', 'replica')), ('seq', 'data'))
  assert spmd.logical_to_mesh_axes(('batch', 'seq'), rules) == P(
    ('data', 'replica'), None
  )
  rules = (('a', None), ('a', 'x'))
  assert spmd.logical_to_mesh_axes(('a',), rules) == P(None)


def test_none_names_and_empty_rules():
  assert spmd.logical_to_mesh_axes(None) is None
  assert spmd.logical_to_mesh_axes((None, 'x'), ()) == P(None, None)
  assert spmd.logical_to_mesh_axes(P('a', None), (('a', 'm'),)) == P('m', None)


def test_errors():
  with pytest.raises(ValueError) as info:
    spmd.logical_to_mesh_axes(('a', 'a', None, None), (('a', 'x'),))
  assert str(info.value) == (
    "Unsupported: Dimensions ('a',) occur more than once in array names."
  )
  with pytest.raises(ValueError, match='Unknown axis rule specification'):
    spmd.logical_to_mesh_axes(('a',), {'a': 'x'})


def test_rules_context_manager_and_setter():
  assert spmd.get_logical_axis_rules() == ()
  outer = (('batch', 'data'),)
  inner = (('batch', 'model'),)
  with spmd.logical_axis_rules(outer):
    assert spmd.get_logical_axis_rules() == outer
    assert spmd.logical_to_mesh_axes(('batch',)) == P('data')
    with spmd.logical_axis_rules(inner):
      assert spmd.logical_to_mesh_axes(('batch',)) == P('model')
    assert spmd.get_logical_axis_rules() == outer
    spmd.set_logical_axis_rules(inner)
    assert spmd.get_logical_axis_rules() == inner
  assert spmd.get_logical_axis_rules() == ()
  try:
    spmd.set_logical_axis_rules(outer)
    assert spmd.get_logical_axis_rules() == outer
    seen = []
    thread = threading.Thread(
      target=lambda: seen.append(spmd.get_logical_axis_rules())
    )
    thread.start()
    thread.join()
    # Rules are per thread: a new thread starts with none.
    assert seen == [()]
  finally:
    spmd.set_logical_axis_rules(())


def test_context_rules_are_per_thread():
  seen = []
  with spmd.logical_axis_rules((('a', 'x'),)):
    thread = threading.Thread(
      target=lambda: seen.append(spmd.get_logical_axis_rules())
    )
    thread.start()
    thread.join()
  assert seen == [()]


def test_context_restored_after_error():
  with pytest.raises(RuntimeError):
    with spmd.logical_axis_rules((('a', 'x'),)):
      raise RuntimeError
  assert spmd.get_logical_axis_rules() == ()


def test_logical_to_mesh_on_a_tree():
  logical = {
    'params': {'W1': P('layer', 'embed', 'hidden'), 'b': P()},
    'step': None,
  }
  rules = (('batch', 'data'), ('hidden', 'model'))
  mesh_spec = spmd.logical_to_mesh(logical, rules)
  assert mesh_spec == {
    'params': {'W1': P(None, None, 'model'), 'b': P()},
    'step': None,
  }


def test_logical_to_mesh_sharding():
  mesh = jax.make_mesh((1, 1), ('data', 'model'))
  logical = {'w': P('embed', 'hidden')}
  shardings = spmd.logical_to_mesh_sharding(
    logical, mesh, (('hidden', 'model'),)
  )
  assert shardings == {'w': NamedSharding(mesh, P(None, 'model'))}


def test_unconstrained_rules_and_names():
  from flax import linen as nn
  from flax.linen import partitioning as nn_partitioning

  U = P.UNCONSTRAINED
  rules = (('batch', 'data'), ('embed', None))
  assert nn_partitioning.logical_to_mesh_axes(
    ('batch', 'foo'), rules + (('foo', U),)
  ) == P('data', U)
  # UNCONSTRAINED uses no mesh axis: several dimensions may have it.
  assert nn.logical_to_mesh_axes(
    ('a', 'b', 'c'), (('a', U), ('b', U), ('c', 'x'))
  ) == P(U, U, 'x')
  assert nn.logical_to_mesh_axes(
    ('a', 'b'), (('a', ('x', 'y')), ('b', U))
  ) == P(('x', 'y'), U)
  assert nn.logical_to_mesh_axes(
    ('a', 'b'), (('a', None), ('a', U), ('b', 'x'))
  ) == P(None, 'x')
  assert nn.logical_to_mesh_axes(('a',), (('a', U), ('a', 'x'))) == (P(U))
  # A dimension named UNCONSTRAINED stays so, even twice.
  assert nn.logical_to_mesh_axes(('a', U), (('a', 'x'),)) == P('x', U)
  assert nn.logical_to_mesh_axes(('a', U, U), (('a', 'x'),)) == (P('x', U, U))
  assert nn.logical_to_mesh(
    {'k': P('batch', 'foo')}, rules + (('foo', U),)
  ) == {'k': P('data', U)}
