"""nnx.merge / nnx.prefix argument errors: Flax 0.12.8's classes and key
phrases, and the missing path named when a state lacks a leaf."""

import re

import jax.numpy as jnp
import pytest
from flax import nnx


def _linear(out=3):
  return nnx.Linear(2, out, rngs=nnx.Rngs(0))


def test_merge_state_missing_a_key_names_the_path():
  graphdef, state = nnx.split(_linear())
  with pytest.raises(
    ValueError,
    match=re.escape('Incorrect number of leaves, expected 2 leaves, but got 1.')
    + r".*no value at \('bias',\)",
  ):
    nnx.merge(graphdef, nnx.State({'kernel': state['kernel']}))


def test_merge_nested_missing_and_extra_paths():
  model = nnx.Sequential(_linear(), nnx.Linear(3, 3, rngs=nnx.Rngs(1)))
  graphdef, state = nnx.split(model)
  del state['layers'][1]['bias']
  with pytest.raises(ValueError, match=r"no value at \('layers', 1, 'bias'\)"):
    nnx.merge(graphdef, state)
  graphdef, state = nnx.split(_linear())
  state['extra'] = nnx.Param(jnp.zeros(1))
  with pytest.raises(ValueError, match=r"no leaf at \('extra',\)"):
    nnx.merge(graphdef, state)


def test_merge_graph_states():
  params, rest = nnx.unpack(_linear(), nnx.Param, ...)
  assert type(nnx.merge(params, rest)) is nnx.Linear
  with pytest.raises(ValueError, match='GraphDef must be the same'):
    nnx.merge(params, nnx.unpack(_linear(4)))
  with pytest.raises(ValueError, match='Expected GraphState object'):
    nnx.merge(params, nnx.state(_linear()))


def test_merge_without_state_or_graphdef():
  graphdef, state = nnx.split(_linear())
  with pytest.raises(
    TypeError, match="missing 1 required positional argument: 'state'"
  ):
    nnx.merge(graphdef)
  with pytest.raises(
    TypeError, match="missing 1 required positional argument: 'state'"
  ):
    nnx.merge(nnx.graphdef(nnx.Module()))
  with pytest.raises(TypeError, match='Expected a GraphDef or GraphState'):
    nnx.merge(state)


def test_prefix_without_matching_filter():
  with pytest.raises(
    ValueError, match=re.escape("No filter matched leaf at path ('bias',)")
  ):
    nnx.prefix(_linear(), {nnx.BatchStat: 0}, graph=False)


def test_graph_state_and_tree_state_attributes():
  model = _linear()
  params, _ = nnx.unpack(model, nnx.Param, ...)
  assert params.kernel.shape == (2, 3)
  assert nnx.prefix(model, {nnx.Param: 0}, graph=False).kernel == 0
  with pytest.raises(AttributeError, match='nope'):
    params.nope
