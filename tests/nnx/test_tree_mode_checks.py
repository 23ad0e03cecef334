"""Tree mode (graph=False) structural checks: reference cycles,
pytree=False objects and shared jax.Refs are ValueErrors with Flax 0.12.8's
key phrases."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx


class Opaque(nnx.Pytree, pytree=False):
  def __init__(self):
    self.x = 1


def _cycle():
  a = nnx.List([1])
  b = nnx.List([2, a])
  a.append(b)
  return a


@pytest.mark.parametrize(
  'fn',
  [
    lambda a: list(nnx.iter_graph(a, graph=False)),
    lambda a: nnx.recursive_map(lambda p, x: x, a, graph=False),
    lambda a: nnx.split(a, graph=False),
  ],
  ids=['iter_graph', 'recursive_map', 'split'],
)
def test_cycle_detected(fn):
  with pytest.raises(ValueError, match='Cycle detected for List'):
    fn(_cycle())


def test_cycles_are_fine_in_graph_mode():
  assert len(list(nnx.iter_graph(_cycle()))) > 0


@pytest.mark.parametrize(
  'name, fn',
  [
    ('flatten', lambda: nnx.split([Opaque()], graph=False)),
    ('flatten', lambda: nnx.split(Opaque(), graph=False)),
    ('flatten', lambda: nnx.state(Opaque(), graph=False)),
    ('flatten', lambda: nnx.graph.flatten(Opaque(), graph=False)),
    ('flatten', lambda: nnx.split(nnx.Dict(o=Opaque()), graph=False)),
    ('iter_graph', lambda: list(nnx.iter_graph([Opaque()], graph=False))),
    ('iter_children', lambda: list(nnx.iter_children(Opaque(), graph=False))),
    (
      'recursive_map',
      lambda: nnx.recursive_map(lambda p, x: x, Opaque(), graph=False),
    ),
  ],
)
def test_pytree_false_rejected(name, fn):
  with pytest.raises(
    ValueError,
    match=f"Cannot use '{name}' with graph=False on a 'Opaque' instance "
    'that has pytree=False',
  ):
    fn()


def test_pytree_false_path_named():
  with pytest.raises(ValueError, match=r'Found at path: \.o'):
    nnx.split(nnx.Dict(o=Opaque()), graph=False)


def test_shared_ref_rejected_in_tree_mode():
  r = jax.new_ref(jnp.array(1.0))
  with pytest.raises(ValueError, match=r'Duplicate Ref\(1\.'):
    nnx.split([r, r], graph=False)
  # graph mode: one leaf, shared again by merge
  graphdef, state = nnx.split([r, r])
  assert list(state.keys()) == [0] and state[0] is r
  merged = nnx.merge(graphdef, state)
  assert merged[0] is r and merged[1] is r
