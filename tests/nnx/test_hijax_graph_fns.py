"""NNX graph functions (nnx.state, split, merge, update, pop, clone) on
hijax Variables inside plain JAX transforms (``jax.jit``,
``jax.eval_shape``), where a hijax Variable is a tracer."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2), hijax=True)
    self.b = nnx.Param(jnp.zeros(2), hijax=True, tag='b')
    self.c = nnx.BatchStat(jnp.zeros(()), hijax=True)


def _type_names(state):
  return {k: type(v).__name__ for k, v in state.items()}


def test_state_leaves_are_the_traced_variables():
  m = Model()
  seen = {}

  @jax.jit
  def f(m):
    state = nnx.state(m)
    seen['types'] = _type_names(state)
    seen['same'] = [state['w'] is m.w, state['c'] is m.c]
    seen['repr'] = repr(state)
    seen['batch_stats'] = sorted(nnx.state(m, nnx.BatchStat).keys())
    seen['tagged'] = sorted(nnx.state(m, nnx.WithTag('b')).keys())
    return 0

  f(m)
  assert seen['types'] == {
    'b': 'DynamicJaxprTracer',
    'c': 'DynamicJaxprTracer',
    'w': 'DynamicJaxprTracer',
  }
  assert seen['same'] == [True, True]
  assert seen['repr'] == (
    'State({\n'
    "  'b': JitTracer(Param()),\n"
    "  'c': JitTracer(BatchStat()),\n"
    "  'w': JitTracer(Param())\n"
    '})'
  )
  assert seen['batch_stats'] == ['c']
  assert seen['tagged'] == ['b']


def test_metadata_on_traced_variables():
  m = Model()
  seen = {}

  @jax.jit
  def f(m):
    seen['meta'] = [m.b.tag, m.w.hijax, isinstance(m.c, nnx.BatchStat)]
    with pytest.raises(AttributeError, match='has no attribute shape'):
      m.w.shape
    return 0

  f(m)
  assert seen['meta'] == ['b', True, True]


def test_split_graphdef_matches_outside_and_merge_reuses_tracers():
  m = Model()
  outside = nnx.graphdef(m)
  seen = {}

  @jax.jit
  def f(m):
    graphdef, params, rest = nnx.split(m, nnx.Param, ...)
    seen['keys'] = [sorted(params.keys()), sorted(rest.keys())]
    seen['equal'] = graphdef == outside
    seen['same'] = params['w'] is m.w
    merged = nnx.merge(graphdef, params, rest)
    seen['merged'] = [merged.w is m.w, merged.b is m.b, merged.c is m.c]
    return 0

  f(m)
  assert seen == {
    'keys': [['b', 'w'], ['c']],
    'equal': True,
    'same': True,
    'merged': [True, True, True],
  }


def test_merge_of_arrays_makes_new_hijax_variables():
  m = Model()
  seen = {}

  @jax.jit
  def f(m):
    graphdef, state = nnx.split(m)
    fresh = nnx.merge(graphdef, jax.tree.map(lambda x: x[...] * 5, state))
    seen['fresh'] = [type(fresh.w).__name__, fresh.w.hijax, fresh.w is m.w]
    fresh.w[...] = fresh.w[...] + 1
    return fresh.w[...]

  np.testing.assert_array_equal(f(m), [6.0, 6.0])
  np.testing.assert_array_equal(m.w[...], [1.0, 1.0])
  assert seen['fresh'] == ['DynamicJaxprTracer', True, False]


def test_update_writes_through_the_tracers():
  m = Model()

  @jax.jit
  def f(m):
    _, params, _ = nnx.split(m, nnx.Param, ...)
    nnx.update(m, jax.tree.map(lambda x: x[...] * 3, params))
    m.c[...] = (m.w[...] * 2 + m.b[...]).sum()
    return m.w[...]

  np.testing.assert_array_equal(f(m), [3.0, 3.0])
  np.testing.assert_array_equal(m.w[...], [3.0, 3.0])
  np.testing.assert_array_equal(m.b[...], [0.0, 0.0])
  assert float(m.c[...]) == 12.0


def test_update_with_variables_takes_their_metadata():
  m = Model()

  @jax.jit
  def f(m):
    nnx.update(m, nnx.State({'c': nnx.BatchStat(jnp.array(7.0), tag='new')}))
    assert m.c.tag == 'new'
    return m.c[...]

  assert float(f(m)) == 7.0
  assert float(m.c[...]) == 7.0
  assert m.c.tag == 'new' and m.c.hijax


def test_update_inside_scan():
  m = Model()

  @jax.jit
  def f(m):
    def body(carry, _):
      state = nnx.state(m, nnx.Param)
      nnx.update(m, jax.tree.map(lambda x: x[...] + 1, state))
      return carry, None

    jax.lax.scan(body, 0, None, length=3)
    return m.w[...]

  np.testing.assert_array_equal(f(m), [4.0, 4.0])
  np.testing.assert_array_equal(m.b[...], [3.0, 3.0])


def test_eval_shape_state_is_abstract_variables():
  out = jax.eval_shape(lambda m: nnx.state(m), Model())
  assert _type_names(out) == {
    'b': 'AbstractVariable',
    'c': 'AbstractVariable',
    'w': 'AbstractVariable',
  }
  assert repr(out['w']) == 'Param()'


def test_closed_over_model():
  m = Model()
  seen = {}

  @jax.jit
  def step():
    state = nnx.state(m)
    seen['types'] = _type_names(state)
    nnx.update(m, jax.tree.map(lambda x: x[...] + 1, state))

  step()
  assert seen['types'] == {
    'b': 'HijaxVariable',
    'c': 'HijaxVariable',
    'w': 'HijaxVariable',
  }
  np.testing.assert_array_equal(m.w[...], [2.0, 2.0])
  assert float(m.c[...]) == 1.0
  step()  # the update was not baked into the trace
  np.testing.assert_array_equal(m.w[...], [3.0, 3.0])


def test_clone_inside_jit_is_independent():
  m = Model()

  @jax.jit
  def f(m):
    copy = nnx.clone(m)
    assert copy.w is not m.w and copy.w.hijax
    copy.w[...] = jnp.zeros(2)
    return copy.w[...]

  np.testing.assert_array_equal(f(m), [0.0, 0.0])
  np.testing.assert_array_equal(m.w[...], [1.0, 1.0])


def test_pop_leaves_hijax_variables_in_place():
  m = Model()

  @jax.jit
  def f(m):
    popped = nnx.pop(m, nnx.BatchStat)
    assert list(popped.keys()) == [] and hasattr(m, 'c')
    return 0

  f(m)
  assert list(nnx.pop(m, nnx.BatchStat).keys()) == []
  assert hasattr(m, 'c')


def test_module_built_inside_jit():
  m = Model()
  outside = nnx.graphdef(m)
  seen = {}

  @jax.jit
  def f(m):
    inner = Model()
    seen['equal'] = nnx.graphdef(inner) == outside
    m.d = nnx.Param(jnp.ones(3), hijax=True)
    seen['keys'] = sorted(nnx.state(m).keys())
    merged = nnx.merge(*nnx.split(m))
    seen['same'] = merged.d is m.d
    return m.d[...]

  np.testing.assert_array_equal(f(m), [1.0, 1.0, 1.0])
  assert seen == {'equal': True, 'keys': ['b', 'c', 'd', 'w'], 'same': True}
  assert not hasattr(m, 'd')


def test_flatten_unflatten_inside_jit():
  m = Model()
  seen = {}

  @jax.jit
  def f(m):
    graphdef, flat = nnx.graph.flatten(m)
    seen['paths'] = [path for path, _ in flat]
    seen['same'] = nnx.graph.unflatten(graphdef, flat).w is m.w
    raw = nnx.graph.flatten(m, with_paths=False)[1]
    seen['raw'] = [type(x).__name__ for x in raw]
    return 0

  f(m)
  assert seen == {
    'paths': [('b',), ('c',), ('w',)],
    'same': True,
    'raw': ['DynamicJaxprTracer'] * 3,
  }


def test_tree_mode_inside_jit():
  m = Model()
  outside, _ = nnx.split(m, graph=False)
  seen = {}

  @jax.jit
  def f(m):
    graphdef, params, rest = nnx.split(m, nnx.Param, ..., graph=False)
    seen['equal'] = graphdef == outside
    seen['same'] = [
      params['w'] is m.w,
      nnx.merge(graphdef, params, rest).w is m.w,
    ]
    nnx.update(m, jax.tree.map(lambda x: x[...] * 2, params))
    fresh = nnx.merge(
      graphdef, jax.tree.map(lambda x: x[...] * 5, params), rest
    )
    seen['fresh'] = [type(fresh.w).__name__, fresh.w is m.w]
    return m.w[...]

  np.testing.assert_array_equal(f(m), [2.0, 2.0])
  np.testing.assert_array_equal(m.w[...], [2.0, 2.0])
  assert seen == {
    'equal': True,
    'same': [True, True],
    'fresh': ['DynamicJaxprTracer', False],
  }
