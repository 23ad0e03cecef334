"""Eager sharding of Variables needs a mesh whose axes are all Explicit or
all Auto; mixed axis types are a ValueError (as in Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from flax.core import spmd as core_spmd
from jax.sharding import AxisType

E, A, M = AxisType.Explicit, AxisType.Auto, AxisType.Manual
MIXED = 'Mesh must have all axes as Explicit or all axes as Auto'


def _mesh(*types):
  return jax.make_mesh((1, 1), ('a', 'b'), axis_types=types)


@pytest.mark.parametrize(
  'types, shown',
  [
    ((E, A), r'\(Explicit, Auto\)'),
    ((A, E), r'\(Auto, Explicit\)'),
    ((E, M), r'\(Explicit, Manual\)'),
    ((M, M), r'\(Manual, Manual\)'),
  ],
)
def test_variable_mesh_metadata(types, shown):
  with pytest.raises(
    ValueError, match=f'{MIXED}. Got mixed axis types: {shown}'
  ):
    nnx.Param(jnp.ones((4, 8)), out_sharding=('a', 'b'), mesh=_mesh(*types))


def test_context_mesh_layers_and_jit():
  mesh = _mesh(E, A)
  with jax.set_mesh(mesh):
    with pytest.raises(ValueError, match=MIXED):
      nnx.Param(jnp.ones((4, 8)), out_sharding=(None, None))
    with pytest.raises(ValueError, match=MIXED):
      nnx.Linear(
        4,
        8,
        kernel_init=nnx.with_partitioning(nnx.initializers.ones, ('a', 'b')),
        rngs=nnx.Rngs(0),
      )
    with pytest.raises(ValueError, match=MIXED):
      jax.jit(lambda: nnx.Param(jnp.ones(4), out_sharding=('a',))[...])()


def test_unsharded_or_lazy_variables_are_fine():
  mesh = _mesh(E, A)
  assert nnx.Param(jnp.ones(2), mesh=mesh).shape == (2,)
  assert nnx.Param(jnp.ones(2), out_sharding=None, mesh=mesh).shape == (2,)
  v = nnx.Param(
    jnp.ones((4, 8)), out_sharding=('a', 'b'), mesh=mesh, eager_sharding=False
  )
  assert v.out_sharding == ('a', 'b')


@pytest.mark.parametrize('types', [(E, E), (A, A)])
def test_uniform_meshes_shard(types):
  mesh = _mesh(*types)
  v = nnx.Param(jnp.ones((4, 8)), out_sharding=('a', 'b'), mesh=mesh)
  assert v[...].sharding.spec == jax.P('a', 'b')


def test_core_shard_value_checks_the_mesh_it_uses():
  mixed, explicit = _mesh(E, A), _mesh(E, E)
  x = jnp.ones((4, 8))
  with pytest.raises(ValueError, match=MIXED):
    core_spmd.shard_value(x, ('a',), None, mixed)
  with pytest.raises(ValueError, match=MIXED):
    core_spmd.shard_value(
      x, jax.sharding.NamedSharding(mixed, jax.P('a')), None, None
    )
  assert core_spmd.shard_value(x, (), None, mixed) is x
  with jax.set_mesh(mixed):  # the mesh argument wins over the context
    assert core_spmd.shard_value(x, ('a',), None, explicit).shape == (4, 8)
