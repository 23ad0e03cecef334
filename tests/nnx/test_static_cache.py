"""nnx.graph.static_cache, StaticCache and IndexesPytreeDef (behaviour of
Flax 0.12.8): the cache is consumed by the next update context, and
splits in that context use the cached structure of the nodes it holds."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from flax.nnx import graph


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.b = nnx.BatchStat(jnp.zeros(1))


def cache_entry(m):
  ref_index = graph.RefMap()
  graphdef, flat = graph.flatten(m, ref_index=ref_index)
  return graph.StaticCache.create(
    graphdef, flat.paths, list(flat.leaves), ref_index
  )


def test_create():
  m = M()
  entry = cache_entry(m)
  assert entry._fields == (
    'graphdef',
    'final_graphdef',
    'paths',
    'variables',
    'new_ref_index',
    'new_index_ref',
  )
  assert entry.paths == (('b',), ('w',))
  assert entry.variables == [m.b, m.w]
  assert entry.final_graphdef != entry.graphdef
  assert entry.final_graphdef.nodes[0].outer_index == 0
  assert isinstance(entry.new_index_ref, graph.IndexMap)
  assert entry.new_index_ref[0] is m


def test_consumed_by_update_context():
  cache = {}
  with graph.static_cache(cache):
    with nnx.update_context('a') as ctx:
      assert ctx.static_cache is cache
  with nnx.update_context('a') as ctx:
    assert ctx.static_cache is None


def test_unconsumed_is_an_error():
  with pytest.raises(ValueError, match='no context consumed it'):
    with graph.static_cache({}):
      pass
  # The error of the body wins and the pending cache is dropped.
  with pytest.raises(KeyError):
    with graph.static_cache({}):
      raise KeyError('x')
  with nnx.update_context('b') as ctx:
    assert ctx.static_cache is None


def test_split_uses_the_cached_structure():
  m = M()
  entry = cache_entry(m)
  m.w[...] = jnp.full(2, 5.0)
  # Not traversed: an attribute added after the cache was made is not seen.
  m.extra = nnx.Param(jnp.zeros(3))
  with graph.static_cache({m: entry}):
    with nnx.update_context('c'):
      with nnx.split_context('c') as ctx:
        graphdef, state = ctx.split(m)
        assert ctx.ref_index[m] == 0
  assert graphdef is entry.graphdef
  assert list(state.keys()) == ['b', 'w']
  assert state['w'] is m.w
  assert state['w'][...].tolist() == [5.0, 5.0]


def test_nodes_not_in_the_cache_are_traversed():
  m, other = M(), M()
  with graph.static_cache({m: cache_entry(m)}):
    with nnx.update_context('d'):
      with nnx.split_context('d') as ctx:
        graphdef, state = ctx.split(other)
  assert graphdef == nnx.graphdef(other)
  assert state['w'] is other.w


def test_indexes_pytree_def():
  d = graph.IndexesPytreeDef(
    graph.HashableMapping({'a': 0}), jax.tree.structure([1])
  )
  assert d._fields == ('key_index', 'treedef')
  assert (
    repr(d) == "IndexesPytreeDef(key_index={'a': 0}, treedef=PyTreeDef([*]))"
  )
  assert len(jax.tree.leaves(d)) == 2
  assert hash(d) == hash(
    graph.IndexesPytreeDef(
      graph.HashableMapping({'a': 0}), jax.tree.structure([1])
    )
  )
