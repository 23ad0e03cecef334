"""nnx.jit with in_shardings: the argument Variables the call hands back
carry their input shardings (every Variable with graph updates, the ones
set inside otherwise; the others keep their arrays)."""

import pathlib
import sys
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import stand_in_layers  # noqa: E402

MESH = jax.make_mesh(
  (2, 2), ('a', 'b'), axis_types=(jax.sharding.AxisType.Auto,) * 2
)


def sh(*names):
  return NamedSharding(MESH, P(*names))


class K(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((4, 4)))
    self.c = nnx.BatchStat(jnp.zeros((4, 4)))


def spec(v):
  return getattr(v.get_value().sharding, 'spec', None)


def test_graph_updates_hand_back_every_variable_with_its_input_sharding():
  m = K()

  @nnx.jit(in_shardings=(sh('a', 'b'), None))
  def f(m, x):
    m.c[...] = jax.lax.with_sharding_constraint(m.w[...] * x, sh('b', 'a'))
    m.extra = nnx.Param(jnp.ones((4, 4)))
    return jax.lax.with_sharding_constraint(m.w[...], sh(None, 'b'))

  y = f(m, 2.0)
  assert [spec(m.w), spec(m.c), spec(m.extra)] == [P('a', 'b')] * 3
  assert y.sharding.spec == P(None, 'b')
  np.testing.assert_array_equal(m.c[...], 2 * np.ones((4, 4)))


def test_state_sharding_entries_and_static_arguments():
  m = stand_in_layers.Linear(4, 4, rngs=nnx.Rngs(0))
  shardings = nnx.StateSharding(
    {nnx.PathContains('kernel'): sh('a', 'b'), nnx.PathContains('bias'): sh()}
  )

  @nnx.jit(in_shardings=(shardings, None), static_argnames='flip')
  def f(m, scale, flip):
    names = ('b', 'a') if flip else ('a', 'b')
    m.kernel[...] = jax.lax.with_sharding_constraint(
      m.kernel[...] * scale, sh(*names)
    )

  f(m, 0.5, True)
  assert spec(m.kernel) == P('a', 'b') and spec(m.bias) == P()

  @nnx.jit(in_shardings=(shardings,))
  def add(m):
    m.extra = nnx.Param(jnp.ones(2))

  with pytest.raises(ValueError, match='No axis found'):
    add(stand_in_layers.Linear(4, 4, rngs=nnx.Rngs(0)))


@pytest.mark.parametrize(
  'kw', [{'graph_updates': False}, {'graph': False}], ids=['graph', 'tree']
)
def test_without_graph_updates_only_set_variables_come_back(kw):
  m = K()
  w = m.w.get_value()

  @nnx.jit(in_shardings=(sh('a', 'b'), None), **kw)
  def f(m, x):
    m.c[...] = jax.lax.with_sharding_constraint(m.w[...] * x, sh('b', 'a'))

  f(m, 3.0)
  assert m.w.get_value() is w  # not set: keeps its array
  assert spec(m.c) == P('a', 'b')
  np.testing.assert_array_equal(m.c[...], 3 * np.ones((4, 4)))
