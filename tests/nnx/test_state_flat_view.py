"""A State keeps its flat view across reads and forgets it on every change."""

import jax
import jax.numpy as jnp
from flax import nnx


class Inner(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.zeros(2))


class Outer(nnx.Module):
  def __init__(self):
    self.sub = Inner()
    self.b = nnx.Param(jnp.zeros(1))


def _split_materialized():
  model = Outer()
  graphdef, state = nnx.split(model)
  jax.tree_util.tree_leaves(state)  # builds the nested dict
  return model, graphdef, state


def test_flat_items_survive_reads():
  _, _, state = _split_materialized()
  first = state.flat_state()
  assert [p for p, _ in first] == [('b',), ('sub', 'w')]
  assert state._flat_items() is state._flat_items()


def test_set_item_on_root_is_seen_by_update():
  model, _, state = _split_materialized()
  state._flat_items()
  state['b'] = nnx.Param(jnp.ones(1))
  nnx.update(model, state)
  assert model.b[...].tolist() == [1.0]


def test_set_item_on_sub_state_is_seen_by_merge():
  _, graphdef, state = _split_materialized()
  state._flat_items()
  state['sub']['w'] = nnx.Param(jnp.full(2, 3.0))
  merged = nnx.merge(graphdef, state)
  assert merged.sub.w[...].tolist() == [3.0, 3.0]


def test_attribute_set_on_sub_state_is_seen():
  _, _, state = _split_materialized()
  state._flat_items()
  sub = state.sub
  sub.w = nnx.Param(jnp.full(2, 4.0))
  leaves = dict(state.flat_state())
  assert leaves[('sub', 'w')][...].tolist() == [4.0, 4.0]


def test_delete_on_sub_state_is_seen():
  _, _, state = _split_materialized()
  state._flat_items()
  del state['sub']['w']
  assert [p for p, _ in state.flat_state()] == [('b',)]


def test_raw_mapping_changes_are_seen():
  state = nnx.State({'a': 1, 'b': {'c': 2}})
  assert dict(state.flat_state()) == {('a',): 1, ('b', 'c'): 2}
  state.raw_mapping['b']['d'] = 3
  assert dict(state.flat_state()) == {('a',): 1, ('b', 'c'): 2, ('b', 'd'): 3}


def test_replace_by_pure_dict_is_seen():
  state = nnx.State({'a': 1, 'b': {'c': 2}})
  state._flat_items()
  nnx.replace_by_pure_dict(state, {'b': {'c': 5}})
  assert dict(state.flat_state()) == {('a',): 1, ('b', 'c'): 5}


def test_raw_mapping_of_a_flat_state_keeps_its_leaves():
  model = Outer()
  _, state = nnx.split(model)  # built from a flat view, no nested dict yet
  raw = state.raw_mapping
  assert set(raw) == {'b', 'sub'}
  assert [p for p, _ in state.flat_state()] == [('b',), ('sub', 'w')]
