"""flax.core.spmd: logical axis rules, shardings and meta helpers."""

import threading

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P

from flax.core import meta
from flax.core import spmd


def test_rules_are_per_thread_and_restored_by_blocks():
  out = []
  spmd.set_logical_axis_rules([('g', 'G')])
  try:
    with spmd.logical_axis_rules([('a', 'b')]):
      t = threading.Thread(
        target=lambda: out.append(spmd.get_logical_axis_rules())
      )
      t.start()
      t.join()
      out.append(spmd.get_logical_axis_rules())
    out.append(spmd.get_logical_axis_rules())
    with spmd.logical_axis_rules([('a', 'b')]):
      with spmd.logical_axis_rules([('c', 'd')]):
        spmd.set_logical_axis_rules([('x', 'x')])
        out.append(spmd.get_logical_axis_rules())
      out.append(spmd.get_logical_axis_rules())
  finally:
    spmd.set_logical_axis_rules(())
  assert out == [(), [('a', 'b')], [('g', 'G')], [('x', 'x')], [('a', 'b')]]


def test_composite_rules():
  assert spmd.composite_rules([('a', 'x')], [('a', 'x')]) == (('a', 'x'),)
  assert spmd.composite_rules(
    [('b', 'x'), ('a', 'y')], [('a', 'y'), ('c', 'X')]
  ) == (('b', 'x'), ('a', 'y'), ('c', 'X'))
  assert spmd.composite_rules([], []) == ()
  with pytest.raises(ValueError, match='Inconsistent logical axis'):
    spmd.composite_rules([('a', 'x')], [('a', 'X')])


def test_pspecs():
  assert spmd.from_sharding_rules(('a', 'b'), [('a', None)]) == (None, 'b')
  assert spmd.from_sharding_rules(
    ('a', 'b', None, ('a', 'b')), (('a', 'X'), ('b', ('Y', 'Z')))
  ) == ('X', ('Y', 'Z'), None, ('a', 'b'))
  assert spmd.get_pspec(P('a', 'b'), [('a', 'X')]) == P('X', 'b')
  assert spmd.get_pspec(('a',), [('a', 'X'), ('a', 'Y')]) == P('Y')
  assert spmd.get_pspec(('a', 'b')) == P('a', 'b')
  assert spmd.apply_rules(('a', 'b'), (('a', 'X'),)) == P('X', 'b')
  with spmd.logical_axis_rules([('a', 'Q')]):
    assert spmd.get_pspec(('a', 'b')) == P('Q', 'b')
  assert spmd.map_sharding(lambda x: f'{x}!', ('a', None)) == P('a!', 'None!')
  assert spmd.map_sharding(str, None) is None


def test_shard_value_and_get_mesh():
  mesh = jax.make_mesh((1, 1), ('X', 'Y'))
  rules = [('a', 'X'), ('b', 'Y')]
  assert spmd.get_mesh(jax.NamedSharding(mesh, P('X'))) is mesh
  assert spmd.get_mesh(('a',)) is None
  x = spmd.shard_value(jnp.ones((4, 8)), ('a', 'b'), rules, mesh)
  assert x.sharding.spec == P('X', 'Y')
  x = spmd.shard_value(jnp.ones((4, 8)), P('a', None), rules, mesh)
  assert x.sharding.spec == P('X', None)
  y = jnp.ones((4, 8))
  assert spmd.shard_value(y, None, rules, mesh) is y
  with pytest.raises(ValueError, match='mesh'):
    spmd.shard_value(jnp.ones((4, 8)), ('a', 'b'), rules, None)
  with jax.set_mesh(mesh):
    x = spmd.shard_value(jnp.ones((4, 8)), ('a', 'b'), rules, None)
    assert x.sharding.spec == P('X', 'Y')
    f = jax.jit(lambda x: spmd.shard_value(x, ('a', 'b'), rules, mesh))
    assert f(jnp.ones((4, 8))).sharding.spec == P('X', 'Y')


def test_global_mesh_defined():
  assert not meta.global_mesh_defined()
  with jax.set_mesh(jax.make_mesh((1,), ('X',))):
    assert meta.global_mesh_defined()


def test_partitioned_nnx_metadata():
  p = meta.Partitioned(1, ('a',))
  assert p.to_nnx_metadata() == {
    'value': 1,
    'mesh': None,
    'out_sharding': ('a',),
  }
  q = meta.Partitioned.from_nnx_metadata(
    {'value': 1, 'out_sharding': ('b',), 'mesh': None, 'foo': 1}
  )
  assert q == meta.Partitioned(1, ('b',), mesh=None)
  with pytest.raises(KeyError):
    meta.Partitioned.from_nnx_metadata({'value': 1, 'sharding_names': ('b',)})
