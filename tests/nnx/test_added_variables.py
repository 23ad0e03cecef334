"""Variables a function adds to its inputs inside an NNX transform without
graph updates (graph=False, or graph_updates=False): they stay inside, and
the input Variables get their own new values (not shifted by the new
ones)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx

MODES = {
  'tree': dict(graph=False),
  'no_updates': dict(graph=True, graph_updates=False),
}


class M(nnx.Module):
  def __init__(self):
    self.b = nnx.Param(jnp.ones(3))
    self.c = nnx.Param(jnp.zeros(3))


def grow(m, x=None):
  # 'a' sorts before 'b' and 'c': a shifted write-back would show
  m.a = nnx.Param(jnp.full(3, 7.0))
  m.b[...] = m.b[...] + 1
  m.c[...] = m.c[...] + 2
  return jnp.sum(m.b[...])


CALLS = {
  'jit': lambda m, kw: nnx.jit(grow, **kw)(m),
  'vmap': lambda m, kw: nnx.vmap(grow, in_axes=(None, 0), **kw)(m, jnp.ones(2)),
  'grad': lambda m, kw: nnx.grad(grow, **kw)(m),
  'value_and_grad': lambda m, kw: nnx.value_and_grad(grow, **kw)(m),
  'cond': lambda m, kw: nnx.cond(True, grow, grow, m, **kw),
  'switch': lambda m, kw: nnx.switch(1, [grow, grow], m, **kw),
  'checkify': lambda m, kw: nnx.checkify(grow, **kw)(m),
  'remat': lambda m, kw: nnx.remat(grow, **kw)(m),
}


@pytest.mark.parametrize('mode', sorted(MODES))
@pytest.mark.parametrize('name', sorted(CALLS))
def test_added_variable_stays_inside(name, mode):
  m = M()
  CALLS[name](m, MODES[mode])
  np.testing.assert_array_equal(m.b[...], np.full(3, 2.0))
  np.testing.assert_array_equal(m.c[...], np.full(3, 2.0))
  assert not hasattr(m, 'a')


@pytest.mark.parametrize('mode', sorted(MODES))
def test_eval_shape_leaves_inputs(mode):
  m = M()
  out = nnx.eval_shape(grow, m, **MODES[mode])
  assert out.shape == () and out.dtype == jnp.float32
  np.testing.assert_array_equal(m.b[...], np.ones(3))
  assert not hasattr(m, 'a')


def grow_step(m, x):
  grow(m)
  return x


@pytest.mark.parametrize('mode', sorted(MODES))
def test_scan_broadcast_module_keeps_its_updates(mode):
  m = M()
  y = nnx.scan(grow_step, in_axes=(None, 0), out_axes=0, **MODES[mode])(
    m, jnp.arange(2.0)
  )
  np.testing.assert_array_equal(y, np.arange(2.0))
  # two steps, the updates carried from one to the next
  np.testing.assert_array_equal(m.b[...], np.full(3, 3.0))
  np.testing.assert_array_equal(m.c[...], np.full(3, 4.0))
  assert not hasattr(m, 'a')


@pytest.mark.parametrize('mode', sorted(MODES))
def test_scan_scanned_module(mode):
  m = nnx.vmap(lambda _: M(), in_axes=0)(jnp.arange(2))
  nnx.scan(grow_step, in_axes=(0, 0), out_axes=0, **MODES[mode])(
    m, jnp.arange(2.0)
  )
  np.testing.assert_array_equal(m.b[...], np.full((2, 3), 2.0))
  np.testing.assert_array_equal(m.c[...], np.full((2, 3), 2.0))


@pytest.mark.parametrize('mode', sorted(MODES))
def test_scan_carry_that_grows_is_an_error(mode):
  def step(m, x):
    grow(m)
    return m, x

  # the carried Module's pytree metadata changed (a new attribute)
  with pytest.raises(ValueError, match='pytree structure error'):
    nnx.scan(
      step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **MODES[mode]
    )(M(), jnp.ones(2))


@pytest.mark.parametrize('mode', [*sorted(MODES), 'graph'])
@pytest.mark.parametrize('name', ['jit', 'switch'])
def test_added_variable_may_be_returned(name, mode):
  kw = MODES.get(mode, dict(graph=True, graph_updates=True))

  def f(m):
    m.a = nnx.Param(jnp.full(3, 7.0))
    m.b[...] = m.b[...] + 1
    return m.a

  m = M()
  if name == 'jit':
    out = nnx.jit(f, **kw)(m)
  else:
    out = nnx.switch(0, [f, f], m, **kw)
  assert type(out) is nnx.Param
  np.testing.assert_array_equal(out[...], np.full(3, 7.0))
  np.testing.assert_array_equal(m.b[...], np.full(3, 2.0))
  # graph updates bring the new attribute out; the pytree modes do not
  assert hasattr(m, 'a') == (mode == 'graph')


# -- a Variable as the root of split / merge / update / to_tree ---------------


def test_split_of_a_variable_gives_the_variable_as_state():
  v = nnx.Param(jnp.ones(3))
  graphdef, state = nnx.split(v)
  assert state is v
  assert nnx.merge(graphdef, state) is v
  graphdef, state = nnx.split(v, graph=False)
  assert state is v and nnx.merge(graphdef, state) is v


def test_split_of_a_variable_with_filters():
  v = nnx.Param(jnp.ones(3))
  graphdef, stats, rest = nnx.split(v, nnx.BatchStat, ...)
  assert type(stats) is nnx.State and len(stats) == 0
  assert rest is v
  graphdef, params, rest = nnx.split(v, nnx.Param, ...)
  assert params is v
  assert type(rest) is nnx.State and len(rest) == 0
  assert nnx.merge(graphdef, params) is v


def test_update_a_variable_with_a_variable():
  v = nnx.Param(jnp.ones(3))
  nnx.update(v, nnx.Param(jnp.zeros(3)))
  np.testing.assert_array_equal(v[...], np.zeros(3))


def test_to_tree_of_a_variable():
  v = nnx.Param(jnp.ones(3))
  tree = nnx.to_tree(v)
  assert type(tree).__name__ == 'NodeStates'
  assert jax.tree_util.tree_structure(tree).num_leaves == 1
  back = nnx.from_tree(tree)
  assert type(back) is nnx.Param and back is not v
  np.testing.assert_array_equal(back[...], np.ones(3))


def test_grad_of_a_variable_root_is_a_variable():
  v = nnx.BatchStat(jnp.ones(2))
  for kw in ({}, dict(graph=False)):
    g = nnx.grad(lambda v: (v[...] * 3).sum(), **kw)(v)
    assert type(g) is nnx.BatchStat
    np.testing.assert_array_equal(g[...], np.full(2, 3.0))
  # differentiated whatever the filter (only Modules are filtered)
  g = nnx.grad(
    lambda v: (v[...] * 3).sum(), argnums=nnx.DiffState(0, nnx.Param)
  )(v)
  assert type(g) is nnx.BatchStat


def test_grad_of_a_state_or_list_of_variables():
  s = nnx.State({'x': nnx.BatchStat(jnp.ones(2)), 'y': nnx.Param(jnp.ones(2))})
  g = nnx.grad(lambda s: (s['x'][...] * 3).sum())(s)
  assert type(g) is nnx.State
  np.testing.assert_array_equal(g['x'][...], np.full(2, 3.0))
  np.testing.assert_array_equal(g['y'][...], np.zeros(2))
  v = nnx.BatchStat(jnp.ones(2))
  first, second = nnx.grad(lambda vs: (vs[0][...] * vs[1][...]).sum())([v, v])
  # the shared Variable gets the whole gradient at its first place
  np.testing.assert_array_equal(first[...], np.full(2, 2.0))
  assert type(second) is nnx.State and len(second) == 0
