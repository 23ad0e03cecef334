"""Results of nnx.prefix (TreeState) are refused as prefixes of transforms
with graph updates, when the transform is created (as Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from jax.sharding import PartitionSpec as P

PHRASE = 'objects are only allowed as prefixes when `graph=True` and'


def _model():
  return nnx.Linear(2, 2, rngs=nnx.Rngs(0))


@pytest.mark.parametrize(
  'make, where',
  [
    (lambda a, s, mesh: nnx.vmap(lambda m, x: x, in_axes=(a, 0)), 'in_axes'),
    (lambda a, s, mesh: nnx.vmap(lambda x: x, out_axes=a), 'out_axes'),
    (lambda a, s, mesh: nnx.pmap(lambda m, x: x, in_axes=(a, 0)), 'in_axes'),
    (lambda a, s, mesh: nnx.scan(lambda m, x: x, in_axes=(a, 0)), 'in_axes'),
    (
      lambda a, s, mesh: nnx.jit(lambda m: 1, in_shardings=(s,)),
      'in_shardings',
    ),
    (lambda a, s, mesh: nnx.jit(lambda m: m, out_shardings=s), 'out_shardings'),
    (
      lambda a, s, mesh: nnx.shard_map(
        lambda m: m, mesh=mesh, in_specs=(s,), out_specs=s
      ),
      'in_specs',
    ),
  ],
)
def test_tree_state_with_graph_updates_is_refused(make, where):
  m = _model()
  axes = nnx.prefix(m, {nnx.Param: 0})
  shard = nnx.prefix(m, {nnx.Param: P()})
  mesh = jax.make_mesh((1,), ('x',))
  with pytest.raises(ValueError, match='Found `TreeState` object at path'):
    make(axes, shard, mesh)
  with pytest.raises(ValueError, match=f'in `{where}`'):
    make(axes, shard, mesh)
  with pytest.raises(ValueError, match=PHRASE):
    make(axes, shard, mesh)


def test_tree_state_without_graph_updates_is_a_prefix():
  m = _model()
  axes = nnx.prefix(m, {nnx.Param: None})
  f = nnx.vmap(lambda m, x: m(x), in_axes=(axes, 0), graph_updates=False)
  assert f(m, jnp.ones((3, 2))).shape == (3, 2)
