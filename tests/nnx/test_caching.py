"""Cached flat views and the nnx.jit fast path never give stale results.

Every test compares against values computed independently with plain JAX /
NumPy, and counts traces (Python side effects run only while tracing).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax.nnx.transforms import compilation


class Lin(nnx.Module):
  def __init__(self, din, dout, seed):
    key = jax.random.key(seed)
    self.w = nnx.Param(jax.random.normal(key, (din, dout)))
    self.b = nnx.Param(jnp.zeros(dout))

  def __call__(self, x):
    y = x @ self.w
    return y + jnp.broadcast_to(self.b[...], y.shape)  # no rank promotion


class Stack(nnx.Module):
  def __init__(self, n):
    self.layers = nnx.data([Lin(2, 2, i) for i in range(n)])

  def __call__(self, x):
    for layer in self.layers:
      x = layer(x)
    return x


def ref_stack(stack, x):
  for layer in stack.layers:
    x = np.asarray(x) @ np.asarray(layer.w[...]) + np.asarray(layer.b[...])
  return x


def test_list_append_invalidates_state_and_jit():
  m = Stack(1)
  assert len(nnx.state(m, nnx.Param).flat_state()) == 2
  m.layers.append(Lin(2, 2, 7))
  paths = [p for p, _ in nnx.state(m, nnx.Param).flat_state()]
  assert ('layers', 1, 'w') in paths and len(paths) == 4

  f = nnx.jit(lambda m, x: m(x))
  x = jnp.ones((1, 2))
  np.testing.assert_allclose(f(m, x), ref_stack(m, x), rtol=1e-5)
  m.layers.append(Lin(2, 2, 8))
  np.testing.assert_allclose(f(m, x), ref_stack(m, x), rtol=1e-5)
  m.layers[0] = Lin(2, 2, 9)  # replacement, same length
  np.testing.assert_allclose(f(m, x), ref_stack(m, x), rtol=1e-5)
  m.layers.pop()
  np.testing.assert_allclose(f(m, x), ref_stack(m, x), rtol=1e-5)


def test_dict_mutation_invalidates():
  class M(nnx.Module):
    def __init__(self):
      self.params = nnx.data({'a': nnx.Param(jnp.array(1.0))})

  m = M()
  assert sorted(nnx.state(m).flat_state().paths) == [('params', 'a')]
  m.params['b'] = nnx.Param(jnp.array(2.0))
  state = nnx.state(m)
  assert float(state['params']['b'][...]) == 2.0
  m.params['a'] = nnx.Param(jnp.array(5.0))
  assert float(nnx.state(m)['params']['a'][...]) == 5.0
  del m.params['b']
  assert sorted(nnx.state(m).flat_state().paths) == [('params', 'a')]


def test_metadata_change_invalidates_graphdef():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))

  m = M()
  g1 = nnx.graphdef(m)
  m.w.set_metadata('out_sharding', ('x',))
  g2, state = nnx.split(m)
  assert g1 != g2
  assert nnx.merge(g2, state).w.out_sharding == ('x',)


def test_arrays_in_containers_write_back_without_retrace():
  traces = []

  class M(nnx.Module):
    def __init__(self):
      self.stats = nnx.data([jnp.zeros(2), (jnp.ones(2),)])
      self.table = nnx.data({'n': jnp.array(0)})

  @nnx.jit
  def step(m):
    traces.append(1)
    m.stats[0] = m.stats[0] + 1.0
    m.table['n'] = m.table['n'] + 1

  m = M()
  for _ in range(3):
    step(m)
  np.testing.assert_allclose(m.stats[0], [3.0, 3.0])
  np.testing.assert_allclose(m.stats[1][0], [1.0, 1.0])
  assert int(m.table['n']) == 3
  assert len(traces) == 1


def test_jit_with_variables_in_pytrees_of_arguments():
  # Like an optax state over nnx.state(model): standalone Variables.
  traces = []
  m = Lin(2, 2, 0)
  # Copies of the model's Variables (nnx.state returns the model's own).
  acc = jax.tree.map(lambda v: v, nnx.state(m, nnx.Param))
  w0 = np.asarray(m.w[...])

  @nnx.jit
  def step(m, acc, x):
    traces.append(1)
    acc['w'][...] = acc['w'][...] + 1.0
    m.b[...] = m.b[...] + x.sum()
    new = jax.tree.map(lambda v: v * 2, acc)
    return new

  x = jnp.ones((3,))
  out = step(m, acc, x)
  out = step(m, out, x)
  np.testing.assert_allclose(acc['w'][...], w0 + 1.0, rtol=1e-6)
  np.testing.assert_allclose(out['w'][...], ((w0 + 1) * 2 + 1) * 2, rtol=1e-6)
  assert isinstance(out['w'], nnx.Param)
  np.testing.assert_allclose(m.b[...], [6.0, 6.0])
  np.testing.assert_allclose(m.w[...], w0)  # acc holds copies
  assert len(traces) == 1


def test_jit_shared_variables_between_arguments():
  m = Lin(2, 2, 0)
  own = nnx.variables(m, nnx.Param)  # the model's own Variables

  @nnx.jit
  def step(m, own):
    own['b'][...] = own['b'][...] + 1.0
    return m.b[...]

  seen = step(m, own)
  # Shared references stay shared inside: the write through `own` shows
  # through `m` in the same call.
  np.testing.assert_allclose(seen, [1.0, 1.0])
  np.testing.assert_allclose(m.b[...], [1.0, 1.0])
  assert own['b'] is m.b


def test_jit_outputs_reference_inputs_and_new_objects():
  m = Lin(2, 2, 0)

  @nnx.jit
  def f(m):
    return m.w, m, [m.b, m.b], Lin(1, 1, 3)

  w, same, bs, new = f(m)
  assert w is m.w and same is m and bs[0] is m.b and bs[1] is m.b
  np.testing.assert_allclose(
    new.w[...], jax.random.normal(jax.random.key(3), (1, 1)), rtol=1e-6
  )


def test_jit_fresh_output_variables_keep_type_and_metadata():
  @nnx.jit
  def f(x):
    return nnx.Param(x * 2, tag='t'), nnx.BatchStat(x)

  p, s = f(jnp.ones(2))
  assert type(p) is nnx.Param and type(s) is nnx.BatchStat
  assert p.tag == 't'
  np.testing.assert_allclose(p[...], [2.0, 2.0])


def test_jit_unchanged_values_keep_their_arrays():
  m = Lin(2, 2, 0)
  w_before = m.w[...]

  @nnx.jit
  def f(m):
    m.b[...] = m.b[...] + 1.0

  f(m)
  # The fast path writes back changed Variables only; the general path
  # writes every value back (equal, not the same array).
  if compilation.FAST_PATH:
    assert m.w[...] is w_before
  np.testing.assert_allclose(m.w[...], w_before)
  np.testing.assert_allclose(m.b[...], [1.0, 1.0])


def test_jit_donation_with_fast_path():
  m = Lin(2, 2, 0)
  w0 = np.asarray(m.w[...])

  @nnx.jit(donate_argnums=0)
  def f(m, x):
    m.b[...] = m.b[...] + x
    return m.w[...].sum()

  total = f(m, jnp.ones(2))
  total = f(m, jnp.ones(2))
  np.testing.assert_allclose(total, w0.sum(), rtol=1e-5)
  np.testing.assert_allclose(m.b[...], [2.0, 2.0])
  np.testing.assert_allclose(m.w[...], w0)  # donated but still readable


@pytest.mark.parametrize('graph', [True, False])
def test_jit_retraces_only_on_structure_change(graph):
  traces = []
  m = Lin(2, 2, 0)

  @nnx.jit(graph=graph)
  def f(m, x):
    traces.append(1)
    return m(x)

  x = jnp.ones((1, 2))
  for _ in range(3):
    f(m, x)
  assert len(traces) == 1
  m.extra = nnx.BatchStat(jnp.zeros(()))
  y = f(m, x)
  assert len(traces) == 2
  np.testing.assert_allclose(y, np.asarray(x) @ np.asarray(m.w[...]), rtol=1e-5)
  f(m, jnp.ones((4, 2)))  # new shape: JAX retraces
  assert len(traces) == 3


def test_tree_mode_jit_writes_back_and_checks_sharing():
  m = Lin(2, 2, 0)

  @nnx.jit(graph=False)
  def f(m, x):
    m.b[...] = m.b[...] + x
    return m.b[...] * 2

  out = f(m, jnp.ones(2))
  np.testing.assert_allclose(out, [2.0, 2.0])
  np.testing.assert_allclose(m.b[...], [1.0, 1.0])
  with pytest.raises(ValueError, match='Duplicate Param'):
    f((m, m.b), jnp.ones(2))


def test_merge_rebuilds_static_containers_and_references():
  class Inner(nnx.Module):
    def __init__(self):
      self.v = nnx.Param(jnp.arange(3.0))
      self.size = 3

  class Outer(nnx.Module):
    def __init__(self):
      self.a = Inner()
      self.b = self.a  # shared
      self.items = nnx.data([nnx.BatchStat(jnp.ones(1)), {'k': self.a.v}])
      self.raw = jnp.full((2,), 4.0)
      self.name = 'outer'

  o = Outer()
  g, s = nnx.split(o)
  m = nnx.merge(g, s)
  assert m.b is m.a and m.items[1]['k'] is m.a.v
  assert m.a.size == 3 and m.name == 'outer'
  np.testing.assert_allclose(m.a.v[...], [0.0, 1.0, 2.0])
  np.testing.assert_allclose(m.raw, [4.0, 4.0])
  assert isinstance(m.items[0], nnx.BatchStat)
  c = nnx.clone(o)
  assert c.a.v is not o.a.v and c.b is c.a
  np.testing.assert_allclose(c.items[0][...], [1.0])


def test_split_returns_the_graph_variables():
  # As in Flax 0.12.8: the State holds the model's own Variables.
  m = Lin(2, 2, 0)
  _, s = nnx.split(m)
  s['b'][...] = jnp.ones(2)
  np.testing.assert_allclose(m.b[...], [1.0, 1.0])
  assert s['w'] is m.w and type(s['w']) is nnx.Param


def test_mutation_from_another_trace_level_raises():
  from flax import errors

  m = Lin(2, 2, 0)

  @jax.jit
  def set_var(x):
    m.b[...] = x
    return x

  with pytest.raises(errors.TraceContextError, match='different trace level'):
    set_var(jnp.ones(2))

  @jax.jit
  def set_attr(x):
    m.extra = x
    return x

  with pytest.raises(errors.TraceContextError, match='nnx.jit'):
    set_attr(jnp.ones(2))

  # Objects created inside the trace, and NNX transforms, are fine.
  @jax.jit
  def local(x):
    inner = Lin(2, 2, 1)
    inner.b[...] = x
    inner.note = 1
    return inner.b[...]

  np.testing.assert_allclose(local(jnp.ones(2)), [1.0, 1.0])

  @nnx.jit
  def through_nnx(m, x):
    m.b[...] = x

  through_nnx(m, jnp.full(2, 3.0))
  np.testing.assert_allclose(m.b[...], [3.0, 3.0])
  m.b[...] = jnp.zeros(2)
  np.testing.assert_allclose(m.b[...], [0.0, 0.0])


def test_missing_sentinel_is_flax_typing():
  from flax import typing
  from flax.nnx import _common

  assert _common.MISSING is typing.MISSING
  with pytest.raises(TypeError, match='missing 1 required positional argument'):
    nnx.Param(typing.MISSING)


def test_tree_mode_pytrees_not_matching_their_graph_view():
  # A shared sub-Pytree (no Variables shared) and a static array attribute:
  # the tree-mode leaves differ from the graph view, so the call flattens
  # the Pytrees with JAX; results stay those of tree mode.
  class Holder(nnx.Module):
    def __init__(self):
      self.lin = Lin(2, 2, 0)
      self.const = nnx.static((1, 2))

  class Shared(nnx.Module):
    def __init__(self):
      self.counter = nnx.BatchStat(jnp.array(0))
      self.empty = nnx.Module()
      self.alias = self.empty

  traces = []

  @nnx.jit(graph=False)
  def f(h, s, x):
    traces.append(1)
    s.counter[...] += 1
    return h.lin(x) * h.const[1]

  h, s = Holder(), Shared()
  x = jnp.ones((1, 2))
  for _ in range(2):
    y = f(h, s, x)
  expected = (np.asarray(x) @ np.asarray(h.lin.w[...])) * 2
  np.testing.assert_allclose(y, expected, rtol=1e-5)
  assert int(s.counter[...]) == 2
  assert len(traces) == 1


def test_merge_reference_into_container_defined_earlier():
  # 'a' (a list) holds the first occurrence of `shared`; the child module
  # under 'b' refers to it: the rebuilt child must get the rebuilt object.
  class Child(nnx.Module):
    def __init__(self, ref):
      self.ref = ref

  class Parent(nnx.Module):
    def __init__(self):
      shared = Lin(1, 1, 0)
      self.a = nnx.data([shared, nnx.Param(jnp.ones(1))])
      self.b = Child(shared)
      self.c = Child(self.a[1])

  p = Parent()
  m = nnx.merge(*nnx.split(p))
  assert m.b.ref is m.a[0] and m.c.ref is m.a[1]
  assert isinstance(m.b.ref, Lin) and m.a[0] is not p.a[0]
  np.testing.assert_allclose(m.b.ref.w[...], p.a[0].w[...])


@pytest.mark.parametrize('graph', [True, False])
def test_jit_shape_dependent_updates_are_tracked_per_shape(graph):
  m = Lin(2, 2, 0)

  @nnx.jit(graph=graph)
  def f(m, x):
    if x.shape[0] > 1:  # only batches update the bias
      m.b[...] = m.b[...] + 1.0
    else:
      m.w[...] = m.w[...] * 0.0
    return x.sum()

  w0 = np.asarray(m.w[...])
  f(m, jnp.ones((2, 2)))
  np.testing.assert_allclose(m.b[...], [1.0, 1.0])
  np.testing.assert_allclose(m.w[...], w0)
  f(m, jnp.ones((1, 2)))
  np.testing.assert_allclose(m.w[...], np.zeros((2, 2)))
  m.w[...] = jnp.ones((2, 2))
  f(m, jnp.ones((2, 2)))  # cached trace of the first shape
  np.testing.assert_allclose(m.b[...], [2.0, 2.0])
  np.testing.assert_allclose(m.w[...], np.ones((2, 2)))
  f(m, jnp.ones((1, 2)))
  np.testing.assert_allclose(m.w[...], np.zeros((2, 2)))
  np.testing.assert_allclose(m.b[...], [2.0, 2.0])


@pytest.mark.parametrize('graph', [True, False])
def test_jit_output_structure_per_input_shape(graph):
  @nnx.jit(graph=graph)
  def f(x):
    if x.shape[0] > 1:
      return {'sum': x.sum(), 'p': nnx.Param(x, tag='big')}
    return (x * 3, nnx.BatchStat(x + 1))

  for _ in range(2):
    big = f(jnp.ones(2))
    small = f(jnp.ones(1))
    assert sorted(big) == ['p', 'sum'] and big['p'].tag == 'big'
    assert type(big['p']) is nnx.Param
    np.testing.assert_allclose(big['sum'], 2.0)
    assert isinstance(small, tuple) and type(small[1]) is nnx.BatchStat
    np.testing.assert_allclose(small[0], [3.0])
    np.testing.assert_allclose(small[1][...], [2.0])


@pytest.mark.parametrize('graph', [True, False])
def test_jit_optimizer_state_of_variables_round_trips(graph):
  m = Lin(2, 2, 0)
  params = nnx.state(m, nnx.Param)
  mu = jax.tree.map(jnp.zeros_like, params)

  @nnx.jit(graph=graph)
  def f(m, mu, count):
    g = nnx.state(m, nnx.Param)
    mu = jax.tree.map(lambda a, b: 0.5 * a + b, mu, g)
    m.b[...] = m.b[...] - 1.0
    return mu, count + 1

  expect = np.zeros((2, 2))
  count = jnp.zeros((), jnp.int32)
  for i in range(3):
    old_mu = mu
    mu, count = f(m, mu, count)
    expect = 0.5 * expect + np.asarray(m.w[...])
    assert type(mu) is nnx.State and type(mu['w']) is nnx.Param
    assert mu['w'] is not old_mu['w']
    np.testing.assert_allclose(mu['w'][...], expect, rtol=1e-6)
    np.testing.assert_allclose(m.b[...], [-(i + 1.0)] * 2)
  assert int(count) == 3


def test_jit_fresh_output_variable_shared_between_outputs():
  @nnx.jit
  def f(x):
    p = nnx.Param(x * 2)
    return p, [p], nnx.State({'a': p}), nnx.Param(x)

  for _ in range(2):
    a, b, s, other = f(jnp.ones(2))
    assert a is b[0] and a is s['a'] and other is not a
    np.testing.assert_allclose(a[...], [2.0, 2.0])
    np.testing.assert_allclose(other[...], [1.0, 1.0])


class Adamish(nnx.Pytree):
  """A Pytree holding a State of Variables (like an optimizer's moments)."""

  def __init__(self, m):
    self.mu = nnx.data(nnx.State({'w': nnx.BatchStat(jnp.zeros((2, 2)))}))
    self.count = nnx.BatchStat(jnp.zeros((), jnp.int32))


@pytest.mark.parametrize('graph', [True, False])
def test_jit_repeated_roots_see_state_and_structure_edits(graph):
  traces = []
  m, opt = Lin(2, 2, 0), None
  opt = Adamish(m)

  @nnx.jit(graph=graph)
  def f(m, opt, x):
    traces.append(1)
    opt.mu['w'][...] = opt.mu['w'][...] + m.w[...]
    opt.count[...] = opt.count[...] + 1
    return m(x)

  x = jnp.ones((1, 2))
  for _ in range(3):
    f(m, opt, x)
  assert len(traces) == 1
  np.testing.assert_allclose(opt.mu['w'][...], 3 * np.asarray(m.w[...]))
  # Replacing a Variable inside the State is seen by the next call.
  opt.mu['w'] = nnx.BatchStat(jnp.ones((2, 2)))
  f(m, opt, x)
  np.testing.assert_allclose(opt.mu['w'][...], 1 + np.asarray(m.w[...]))
  assert int(opt.count[...]) == 4
  # A new root of the same structure reuses the compiled function.
  m2 = Lin(2, 2, 1)
  np.testing.assert_allclose(f(m2, opt, x), ref_stack_lin(m2, x), rtol=1e-5)
  np.testing.assert_allclose(f(m, opt, x), ref_stack_lin(m, x), rtol=1e-5)
  # A changed structure compiles again; a Variable set outside is read.
  m.b[...] = jnp.full((2,), 5.0, jnp.float32)
  np.testing.assert_allclose(f(m, opt, x), ref_stack_lin(m, x), rtol=1e-5)
  m.extra = nnx.BatchStat(jnp.zeros(()))
  np.testing.assert_allclose(f(m, opt, x), ref_stack_lin(m, x), rtol=1e-5)
  assert len(traces) == 2
  # Plain arguments of another type (fast path: its cache is keyed on leaf
  # types; general path: jax.jit treats a NumPy array of the same shape and
  # dtype as the same input) or shape retrace.
  f(m, opt, np.ones((1, 2), np.float32))
  f(m, opt, jnp.ones((3, 2)))
  assert len(traces) == (4 if compilation.FAST_PATH else 3)


def ref_stack_lin(m, x):
  return np.asarray(x) @ np.asarray(m.w[...]) + np.asarray(m.b[...])


def test_jit_repeated_roots_do_not_keep_them_alive():
  import gc
  import weakref

  f = nnx.jit(lambda m, x: m(x))
  m = Lin(2, 2, 0)
  f(m, jnp.ones((1, 2)))
  f(m, jnp.ones((1, 2)))
  ref = weakref.ref(m)
  del m
  gc.collect()
  assert ref() is None
