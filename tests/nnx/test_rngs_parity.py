"""Rngs / RngStream sampling methods, split/broadcast, reseed policies,
split_rngs / fork_rngs / with_rngs in both modes (values settled against
Flax 0.12.8)."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


def key_data(stream):
  return np.asarray(jax.random.key_data(stream.key[...]))


def test_stream_sampling_uses_next_key():
  rngs = nnx.Rngs(0, params=1)
  x = rngs.params.normal((2,))
  np.testing.assert_allclose(x, [0.53193736, -0.72301704], rtol=1e-6)
  assert int(rngs.params.count[...]) == 1
  ref = nnx.Rngs(0, params=1)
  np.testing.assert_array_equal(x, jax.random.normal(ref.params(), (2,)))


def test_rngs_sampling_uses_default_stream():
  rngs = nnx.Rngs(0)
  u = rngs.uniform((3,))
  np.testing.assert_allclose(u, [0.8423141, 0.18237865, 0.2271781], rtol=1e-6)
  assert int(rngs.default.count[...]) == 1


def test_sampler_signatures_and_errors():
  sig = inspect.signature(nnx.Rngs.normal)
  assert list(sig.parameters)[:2] == ['key', 'shape']
  assert list(inspect.signature(nnx.Rngs(0).normal).parameters)[0] == 'shape'
  with pytest.raises(TypeError, match="multiple values for argument 'key'"):
    nnx.Rngs(0).normal(key=jax.random.key(0))


def test_integer_samplers():
  r = nnx.Rngs(0)
  np.testing.assert_array_equal(r.randint((3,), 0, 10), [1, 1, 7])
  np.testing.assert_array_equal(r.permutation(5), [0, 3, 1, 4, 2])
  np.testing.assert_array_equal(r.choice(5, (2,), replace=False), [4, 3])
  np.testing.assert_array_equal(r.bits((2,)), [1146711402, 3152292334])


def test_initializer_method_draws_key_when_called():
  r = nnx.Rngs(0)
  r.uniform((3,))
  init = r.lecun_normal()
  assert int(r.default.count[...]) == 1
  x = init((2, 3))
  assert int(r.default.count[...]) == 2
  np.testing.assert_allclose(
    x[0], [-1.5153329, -1.3828852, 0.15761372], rtol=1e-5
  )
  assert init((2, 2), jnp.float16).dtype == jnp.float16


def test_broadcast_and_split():
  r = nnx.Rngs(0, params=1)
  s = r.params.broadcast(3)
  np.testing.assert_array_equal(key_data(s), [[507451445, 1853169794]] * 3)
  np.testing.assert_array_equal(s.count[...], [0, 0, 0])
  assert int(r.params.count[...]) == 1
  b = r.broadcast({'params': 2, ...: (2, 3)})
  assert b.params.key.shape == (2,) and b.default.key.shape == (2, 3)
  sp = nnx.Rngs(0, params=1).split({'params': 2})
  assert sp.params.key.shape == (2,)
  np.testing.assert_array_equal(key_data(sp.default), [0, 0])  # copied


def test_fork_split_is_deprecated():
  r = nnx.Rngs(0, params=1)
  with pytest.warns(DeprecationWarning, match="'split' argument of 'fork'"):
    f = r.params.fork(split=2)
  assert f.key.shape == (2,)


def test_reseed_draws_from_new_rngs():
  r = nnx.Rngs(0, params=1)
  r.params()
  nnx.reseed(r, params=5)
  np.testing.assert_array_equal(key_data(r.params), [2724472204, 3573582090])
  assert int(r.params.count[...]) == 0
  np.testing.assert_array_equal(key_data(r.default), [0, 0])


def test_reseed_policies():
  r = nnx.Rngs(0, params=1).split(3)
  with pytest.raises(ValueError, match='Cannot reseed stream'):
    nnx.reseed(r, params=5)
  nnx.reseed(r, params=5, policy='match_shape')
  np.testing.assert_array_equal(
    key_data(r.params)[:2], [[1476913942, 4047406665], [3482370469, 797982963]]
  )
  seen = []

  def policy(path, key, shape):
    seen.append((path, key.shape, shape))
    return jax.random.split(key, shape)

  nnx.reseed(r, params=7, policy=policy)
  assert seen == [(('params',), (), (3,))]
  np.testing.assert_array_equal(key_data(r.params)[0], [2737751932, 2099591257])
  with pytest.raises(ValueError, match='policy must be'):
    nnx.reseed(r, params=1, policy='bad')


def test_split_rngs_in_place_and_backups():
  r = nnx.Rngs(0, dropout=1)
  bk = nnx.split_rngs(r, splits=4)
  assert r.dropout.key.shape == (4,)
  items = list(bk)
  assert len(items) == 2 and items[0][0] is r.default
  assert isinstance(bk.replace(backups=[]), nnx.rnglib.SplitBackups)
  nnx.restore_rngs(bk)
  assert r.dropout.key.shape == ()
  assert int(r.dropout.count[...]) == 1


def test_split_rngs_tree_mode_returns_copy():
  r = nnx.Rngs(0, params=1)
  o = nnx.split_rngs(r, splits=2, graph=False)
  assert o is not r and o.params.key.shape == (2,)
  np.testing.assert_array_equal(key_data(o.params)[0], [3704974950, 1863054868])
  assert r.params.key.shape == () and int(r.params.count[...]) == 1
  o = nnx.split_rngs(r, splits=2, graph=True, graph_updates=False)
  assert isinstance(o, nnx.Rngs) and o.default.key.shape == (2,)


def test_fork_rngs_mapping_leaves_others():
  r = nnx.Rngs(0, params=1)
  o = nnx.fork_rngs(r, split={'params': 2}, graph=False)
  assert o.params.key.shape == (2,)
  np.testing.assert_array_equal(key_data(o.default), [0, 0])
  assert int(r.default.count[...]) == 0


def test_with_rngs():
  r = nnx.Rngs(0, params=1, dropout=2)
  o = nnx.with_rngs(
    r,
    split={'params': 2},
    fork='dropout',
    broadcast={'default': 3},
    graph=False,
  )
  assert o.params.key.shape == (2,) and o.default.key.shape == (3,)
  np.testing.assert_array_equal(key_data(o.dropout), [1821159224, 3364244817])
  np.testing.assert_array_equal(
    key_data(o.default)[0], [1797259609, 2579123966]
  )

  class M(nnx.Module):
    def __init__(self, rngs):
      self.rngs = rngs
      self.w = nnx.Param(jnp.ones(2))

  m = M(nnx.Rngs(0, dropout=1))

  @nnx.with_rngs(split=2, graph_updates=False)
  def f(m):
    return m

  out = f(m)
  assert out is not m and out.w is m.w
  assert out.rngs.dropout.key.shape == (2,)
  assert int(m.rngs.dropout.count[...]) == 1


@pytest.mark.parametrize(
  'graph, graph_updates', [(None, None), (True, None), (True, True)]
)
def test_with_rngs_refuses_graph_updates(graph, graph_updates):
  r = nnx.Rngs(params=0, dropout=1)
  with pytest.raises(NotImplementedError, match='graph_updates=True'):
    nnx.with_rngs(
      r, split={'params': 3}, graph=graph, graph_updates=graph_updates
    )
  with pytest.raises(NotImplementedError, match='graph_updates=True'):
    nnx.with_rngs(split=2, graph=graph, graph_updates=graph_updates)
  # nothing was drawn
  assert int(r.params.count[...]) == 0


@pytest.mark.parametrize('graph', [False, True])
def test_with_rngs_stream_named_by_two_rules_is_ambiguous(graph):
  r = nnx.Rngs(params=0, dropout=1)
  with pytest.raises(ValueError, match='matches multiple rules') as info:
    nnx.with_rngs(
      r,
      split={'params': 4},
      broadcast={'dropout': 2},
      fork=nnx.Not('dropout'),
      graph=graph,
      graph_updates=False,
    )
  assert str(info.value).splitlines() == [
    "RngStream at path ('params',) matches multiple rules:",
    "  - split matches filter 'params'",
    "  - fork matches filter Not(WithTag('dropout'))",
  ]
  # `dropout` came first and was broadcast; `params` drew nothing
  assert [int(r.dropout.count[...]), int(r.params.count[...])] == [1, 0]


@pytest.mark.parametrize('graph', [False, True])
def test_with_rngs_defaults_give_way_in_split_broadcast_fork_order(graph):
  def shapes(**kwargs):
    r = nnx.Rngs(params=0, dropout=1)
    o = nnx.with_rngs(r, graph=graph, graph_updates=False, **kwargs)
    return o.params.key.shape, o.dropout.key.shape

  # `...`, `True` and a bare count are defaults: no conflict, and the
  # first of split, broadcast, fork that names the stream wins
  assert shapes(split=4, fork='params') == ((4,), (4,))
  assert shapes(fork='params', broadcast={...: 2}) == ((2,), (2,))
  assert shapes(fork=..., broadcast={'params': 2}) == ((2,), ())
  assert shapes(split={'params': 4}, fork=(True,)) == ((4,), ())
  # a tuple of fork filters: its first match is the one compared
  assert shapes(split={'params': 4}, fork=(..., 'params')) == ((4,), ())
  with pytest.raises(ValueError, match='multiple rules'):
    shapes(split={'params': 4}, fork=('dropout', 'params'))
  # Everything() is an explicit filter
  with pytest.raises(ValueError, match='filter Everything'):
    shapes(split={nnx.Everything(): 4}, fork='params')


def test_not_key_filter():
  r = nnx.Rngs(0)
  assert nnx.rnglib.NotKey((), r.default.count)
  assert not nnx.rnglib.NotKey((), r.default.key)
