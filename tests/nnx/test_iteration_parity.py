"""vmap / scan details and Rngs.fork with a split map (values and errors
settled against Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3))


class Block(nnx.Module):
  def __init__(self, rngs):
    self.w = nnx.Param(
      rngs.params.normal((2, 3)), out_sharding=('a', 'b'), eager_sharding=False
    )


# -- vmap out_axes -------------------------------------------------------------


def test_vmap_tuple_out_axes_without_graph_nodes():
  x = jnp.arange(8.0).reshape(4, 2)
  a, s = nnx.vmap(lambda x: (x, x.sum()), out_axes=(1, 0))(x)
  np.testing.assert_array_equal(a, x.T)
  np.testing.assert_array_equal(s, [1.0, 5.0, 9.0, 13.0])


def test_vmap_dict_out_axes_without_graph_nodes():
  x = jnp.arange(6.0).reshape(3, 2)
  out = nnx.vmap(lambda x: {'a': x, 'b': x * 2}, out_axes={'a': 1, 'b': 0})(x)
  assert out['a'].shape == (2, 3) and out['b'].shape == (3, 2)


# -- scan carry checks ---------------------------------------------------------


def _scan(f, carry, xs):
  return nnx.scan(f, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(carry, xs)


def test_scan_carry_returned_twice_raises_value_error():
  with pytest.raises(ValueError, match='Carry references must be the same'):
    _scan(lambda c, x: ((c, c), x), jnp.zeros(2), jnp.ones(3))


@pytest.mark.parametrize(
  'carry, step',
  [
    ({'a': jnp.zeros(2)}, lambda c, x: ({'a': c['a'], 'b': c['a']}, x)),
    ((jnp.zeros(2),), lambda c, x: ((c[0], c[0]), x)),
    ((jnp.zeros(2), jnp.zeros(2)), lambda c, x: (c[0], x)),
    ([jnp.zeros(2)], lambda c, x: ((c[0],), x)),
  ],
)
def test_scan_carry_structure_change_raises_value_error(carry, step):
  with pytest.raises(ValueError, match='pytree structure error'):
    _scan(step, carry, jnp.ones(3))


def test_scan_carry_must_hold_the_same_graph_nodes():
  with pytest.raises(ValueError, match='Carry references must be the same'):
    _scan(lambda c, x: (M(), x), M(), jnp.ones(3))
  with pytest.raises(ValueError, match='Carry references must be the same'):
    _scan(lambda c, x: ((c[1], c[0]), x), (M(), M()), jnp.ones(3))
  with pytest.raises(ValueError, match='Carry references must be the same'):
    _scan(lambda c, x: (jnp.zeros(2), x), M(), jnp.ones(3))


def test_scan_carry_module_and_array_pass():
  m = M()
  (m2, c), ys = _scan(
    lambda c, x: ((c[0], c[1] + x), x * 2), (m, jnp.zeros(())), jnp.ones(3)
  )
  assert m2 is m and float(c) == 3.0
  np.testing.assert_array_equal(ys, [2.0, 2.0, 2.0])


def test_scan_carry_module_gaining_an_attribute_raises_type_error():
  def grow(m, x):
    m.extra = nnx.Param(jnp.zeros(()))
    return m, x

  with pytest.raises(TypeError, match='same pytree structure'):
    _scan(grow, M(), jnp.ones(3))

  def shrink(m, x):
    del m.w
    return m, x

  with pytest.raises(TypeError, match='same pytree structure'):
    _scan(shrink, M(), jnp.ones(3))


# -- transform_metadata under scan / vmap ----------------------------------------

LAYERS = {nnx.PARTITION_NAME: 'layers'}


def _stack(n, metadata=LAYERS):
  return nnx.split_rngs(splits=n)(
    nnx.vmap(lambda r: Block(r), transform_metadata=metadata)
  )(nnx.Rngs(0))


def test_scan_removes_the_partition_axis_inside():
  b = _stack(4)
  assert b.w.out_sharding == ('layers', 'a', 'b')
  seen = []

  @nnx.scan(
    in_axes=(nnx.Carry, 0), out_axes=nnx.Carry, transform_metadata=LAYERS
  )
  def run(x, blk):
    seen.append((blk.w.out_sharding, blk.w.shape))
    return x + blk.w[...].sum()

  run(jnp.zeros(()), b)
  assert seen == [(('a', 'b'), (2, 3))]
  assert b.w.out_sharding == ('layers', 'a', 'b')


def test_scan_without_partition_name_keeps_the_names():
  b = _stack(4)
  seen = []

  @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
  def run(x, blk):
    seen.append(blk.w.out_sharding)
    return x

  run(jnp.zeros(()), b)
  assert seen == [('layers', 'a', 'b')]


def test_vmap_removes_the_partition_axis_inside():
  b = _stack(4)
  seen = []

  @nnx.vmap(in_axes=(0, None), transform_metadata=LAYERS)
  def run(blk, x):
    seen.append(blk.w.out_sharding)
    return x + blk.w[...].sum()

  run(b, 1.0)
  assert seen == [('a', 'b')]
  assert b.w.out_sharding == ('layers', 'a', 'b')


@pytest.mark.parametrize(
  'metadata, axis, names',
  [
    ({}, 0, ('a', 'b')),
    ({nnx.PARTITION_NAME: None}, 0, (None, 'a', 'b')),
    ({nnx.PARTITION_NAME: 'L'}, 0, ('L', 'a', 'b')),
    ({}, 1, ('a', 'b')),
    ({nnx.PARTITION_NAME: None}, 1, ('a', None, 'b')),
    ({nnx.PARTITION_NAME: 'L'}, 1, ('a', 'L', 'b')),
  ],
)
def test_stacked_outputs_get_the_partition_name(metadata, axis, names):
  made = nnx.split_rngs(splits=4)(
    nnx.vmap(lambda r: Block(r), out_axes=axis, transform_metadata=metadata)
  )(nnx.Rngs(0))
  assert made.w.out_sharding == names
  _, scanned = nnx.split_rngs(splits=4)(
    nnx.scan(
      lambda c, r: (c, Block(r)),
      out_axes=(nnx.Carry, axis),
      transform_metadata=metadata,
    )
  )(0.0, nnx.Rngs(0))
  assert scanned.w.out_sharding == names
  assert scanned.w.shape == ((4, 2, 3) if axis == 0 else (2, 4, 3))


def test_scan_in_axis_one_removes_that_name():
  _, b = nnx.split_rngs(splits=4)(
    nnx.scan(
      lambda c, r: (c, Block(r)),
      out_axes=(nnx.Carry, 1),
      transform_metadata={nnx.PARTITION_NAME: 'L'},
    )
  )(0.0, nnx.Rngs(0))
  seen = []

  def f(c, blk):
    seen.append(blk.w.out_sharding)
    return c, None

  nnx.scan(
    f, in_axes=(nnx.Carry, 1), transform_metadata={nnx.PARTITION_NAME: 'L'}
  )(0.0, b)
  assert seen == [('a', 'b')] and b.w.out_sharding == ('a', 'L', 'b')


# -- Rngs.fork with a split map ---------------------------------------------------


def test_rngs_fork_split_map_forks_the_other_streams():
  r = nnx.Rngs(0, params=1)
  with pytest.warns(DeprecationWarning):
    f = r.fork(split={'params': 2, ...: None})
  assert int(r.default.count[...]) == 1 and int(r.params.count[...]) == 1
  assert f.params.key.shape == (2,) and f.default.key.shape == ()
  np.testing.assert_array_equal(
    jax.random.key_data(f.default.key[...]), [1797259609, 2579123966]
  )
  np.testing.assert_array_equal(
    jax.random.key_data(f.params.key[...]),
    [[3704974950, 1863054868], [2705940334, 2639757084]],
  )
  np.testing.assert_array_equal(
    jax.random.key_data(r.default()), [928981903, 3453687069]
  )


def test_rngs_fork_split_map_unmatched_streams_fork_too():
  r = nnx.Rngs(0, params=1, dropout=2)
  with pytest.warns(DeprecationWarning):
    f = r.fork(split={'params': 2})
  assert [int(r[k].count[...]) for k in ('default', 'dropout', 'params')] == [
    1,
    1,
    1,
  ]
  np.testing.assert_array_equal(
    jax.random.key_data(f.dropout.key[...]), [1821159224, 3364244817]
  )
  # Rngs.split leaves the unmatched streams alone
  r = nnx.Rngs(0, params=1)
  s = r.split({'params': 2})
  assert int(r.default.count[...]) == 0
  np.testing.assert_array_equal(jax.random.key_data(s.default.key[...]), [0, 0])


class Counter(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3))
    self.n = nnx.BatchStat(jnp.zeros(()))


@pytest.mark.parametrize(
  'graph_updates, ys, n',
  [(True, [0.0, 1.0, 2.0], 0.0), (False, [0.0, 1.0, 3.0], 3.0)],
)
def test_scan_broadcast_variable_updates(graph_updates, ys, n):
  def step(c, m, x):
    m.n[...] += x
    return c + m.w[...].sum() * x, m.n[...]

  m = Counter()
  c, out = nnx.scan(
    step,
    in_axes=(nnx.Carry, None, 0),
    out_axes=(nnx.Carry, 0),
    graph_updates=graph_updates,
  )(jnp.zeros(()), m, jnp.arange(3.0))
  assert float(c) == 9.0
  np.testing.assert_array_equal(out, ys)
  assert float(m.n[...]) == n


class Pair(nnx.Module):
  def __init__(self, n=3):
    self.w = nnx.Param(jnp.ones((n, 2)))
    self.b = nnx.Param(jnp.zeros((n,)))


def _grow(m, x):
  m.extra = nnx.Param(x * 2)
  return x


@pytest.mark.parametrize('axes', [0, nnx.StateAxes({...: 0})])
def test_vmap_mapped_node_may_gain_attributes(axes):
  m = Pair()
  nnx.vmap(_grow, in_axes=(axes, 0))(m, jnp.arange(3.0))
  np.testing.assert_array_equal(m.extra[...], [0.0, 2.0, 4.0])
  assert m.w.shape == (3, 2)


def test_vmap_mapped_node_new_leaves_follow_the_axis():
  class T(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones((2, 3)))

  def grow_pair(m, x):
    m.extra = nnx.Param(jnp.stack([x, x]))
    return x

  t = T()
  nnx.vmap(grow_pair, in_axes=(1, 0))(t, jnp.arange(3.0))
  np.testing.assert_array_equal(t.extra[...], [[0.0, 1.0, 2.0]] * 2)


def test_vmap_mapped_node_may_lose_attributes():
  def shrink(m, x):
    del m.b
    return x

  m = Pair()
  nnx.vmap(shrink)(m, jnp.arange(3.0))
  assert not hasattr(m, 'b') and m.w.shape == (3, 2)


def test_vmap_broadcast_node_gaining_batched_attribute_raises():
  m = Pair()
  with pytest.raises(ValueError, match='got axis spec None but output was'):
    nnx.vmap(_grow, in_axes=(None, 0))(m, jnp.arange(3.0))
  assert not hasattr(m, 'extra')


@pytest.mark.parametrize('graph', [True, False])
def test_scan_without_updates_keeps_carry_variables(graph):
  kw = dict(
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
    graph=graph,
    graph_updates=False,
  )
  with pytest.raises(ValueError, match='Variable identity must be preserved'):
    nnx.scan(lambda c, x: (M(), x), **kw)(M(), jnp.ones(3))
  with pytest.raises(TypeError, match='same pytree structure'):
    nnx.scan(lambda c, x: ((c, c), x), **kw)(jnp.zeros(2), jnp.ones(3))
  m = M()
  out, ys = nnx.scan(lambda c, x: (c, c.w[...] * x), **kw)(m, jnp.arange(3.0))
  assert ys.shape == (3, 3)


def test_scan_without_updates_module_growing_raises():
  def grow(m, x):
    m.extra = nnx.Param(jnp.zeros(()))
    return m, x

  with pytest.raises(ValueError, match='pytree structure error'):
    nnx.scan(
      grow,
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      graph_updates=False,
    )(M(), jnp.ones(3))


# -- scan: scanned nodes changing structure ------------------------------------


class Stacked(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(6.0).reshape(3, 2))


@pytest.mark.parametrize('axis', [0, nnx.StateAxes({...: 0})])
def test_scan_scanned_node_may_gain_attributes(axis):
  def step(c, m):
    m.extra = nnx.BatchStat(m.w[...] * 2)
    m.w[...] = m.w[...] + 1
    return c + m.w[...].sum(), c

  m = Stacked()
  c, ys = nnx.scan(step, in_axes=(nnx.Carry, axis))(jnp.zeros(()), m)
  assert float(c) == 21.0
  np.testing.assert_array_equal(ys, [0.0, 3.0, 10.0])
  np.testing.assert_array_equal(m.extra[...], jnp.arange(6.0).reshape(3, 2) * 2)
  np.testing.assert_array_equal(m.w[...], jnp.arange(6.0).reshape(3, 2) + 1)


def test_scan_new_leaves_are_stacked_on_the_scanned_axis():
  def step(c, m):
    m.extra = nnx.BatchStat(jnp.ones(4) * c)
    return c + 1, c

  m = Stacked()
  c, ys = nnx.scan(step, in_axes=(nnx.Carry, 1))(jnp.zeros(()), m)
  assert m.extra.shape == (4, 2)
  np.testing.assert_array_equal(m.extra[...], [[0.0, 1.0]] * 4)


def test_scan_broadcast_node_changing_structure_raises():
  def step(c, m):
    m.extra = nnx.BatchStat(jnp.ones(4))
    return c + 1, c

  m = Stacked()
  with pytest.raises(ValueError, match='not scanned'):
    nnx.scan(step, in_axes=(nnx.Carry, None), length=3)(jnp.zeros(()), m)
  assert not hasattr(m, 'extra')
