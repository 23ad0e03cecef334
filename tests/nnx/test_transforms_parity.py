"""make_jaxpr, checkify, graph_updates on cond/switch/loops, vmap with
StateAxes out_axes, StateAxes / StateSharding / DiffState members
(behaviour settled against Flax 0.12.8)."""

import functools
import pathlib
import sys
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

from flax import nnx
from flax.nnx.transforms.transforms import resolve_kwargs

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import stand_in_layers  # noqa: E402


class M(nnx.Module):
  def __init__(self, rngs=None):
    w = jnp.ones(2) if rngs is None else rngs.params.normal((2,))
    self.w = nnx.Param(w)
    self.c = nnx.BatchStat(jnp.zeros(()))


def test_make_jaxpr_needs_graph_updates_false():
  m = M()

  def f(m, x):
    m.c[...] += 1
    return m.w[...] * x

  with pytest.raises(ValueError, match='graph_updates=True'):
    nnx.make_jaxpr(f)(m, 2.0)
  jaxpr = nnx.make_jaxpr(f, graph_updates=False)(m, 2.0)
  assert [v.aval.shape for v in jaxpr.jaxpr.invars] == [(), (2,), ()]
  assert len(jaxpr.jaxpr.outvars) == 1
  assert float(m.c[...]) == 0.0
  g = nnx.make_jaxpr(static_argnums=1, graph_updates=False)(
    lambda m, n: m.w[...] * n
  )
  assert len(g(m, 3).jaxpr.invars) == 2


@pytest.mark.parametrize('graph', [True, False])
def test_checkify_returns_error_and_updates(graph):
  m = M()

  def h(m, x):
    checkify.check(x > 0, 'x must be positive')
    m.c[...] += 1
    return m.w[...] * x

  err, out = nnx.checkify(h, graph=graph)(m, 1.0)
  assert err.get() is None
  np.testing.assert_array_equal(out, [1.0, 1.0])
  err, out = nnx.checkify(h, graph=graph)(m, -1.0)
  assert err.get() == 'x must be positive (`check` failed)'
  assert float(m.c[...]) == 2.0


def test_cond_structure_updates_follow_graph_updates():
  def add(m):
    m.extra = nnx.Param(jnp.zeros(1))
    return m.w[...]

  m = M()
  nnx.cond(True, add, add, m)
  assert hasattr(m, 'extra')
  m = M()
  nnx.cond(True, add, add, m, graph_updates=False)
  assert not hasattr(m, 'extra')

  def bump(m):
    m.c[...] += 1
    return m.w[...]

  m = M()
  nnx.cond(True, bump, bump, m, graph_updates=False)
  assert float(m.c[...]) == 1.0


@pytest.mark.parametrize('graph_updates', [True, False])
def test_fori_loop_graph_updates(graph_updates):
  m = M()

  def body(i, m):
    m.c[...] += i
    return m

  out = nnx.fori_loop(0, 3, body, m, graph_updates=graph_updates)
  assert (out is m) == graph_updates
  assert float(m.c[...]) == 3.0


def test_vmap_out_axes_state_axes():
  @nnx.vmap(in_axes=0, out_axes=nnx.StateAxes({nnx.Param: 0, ...: None}))
  def create(key):
    return M(nnx.Rngs(key))

  m = create(jax.random.split(jax.random.key(0), 3))
  assert m.w[...].shape == (3, 2) and m.c[...].shape == ()
  np.testing.assert_allclose(m.w[...][0], [-0.57478017, 0.79983664], rtol=1e-6)

  @nnx.vmap(in_axes=0, out_axes=nnx.StateAxes({nnx.Param: 1, ...: None}))
  def create_t(key):
    return M(nnx.Rngs(key))

  assert create_t(jax.random.split(jax.random.key(0), 3)).w[...].shape == (
    2,
    3,
  )


def test_state_axes_members():
  sa = nnx.StateAxes({nnx.Param: 0, ...: None})
  assert len(sa) == 2 and list(sa) == [nnx.Param, ...]
  assert sa[nnx.Param] == 0
  m = M()
  assert sa.map_prefix(('w',), m.w) == 0
  assert sa.map_prefix(('c',), m.c) is None
  with pytest.raises(ValueError, match='No axis found'):
    nnx.StateAxes({nnx.Param: 0}).map_prefix(('c',), m.c)
  s = nnx.StateSharding({nnx.Param: 'x', ...: None})
  assert s.shardings == ('x', None)
  assert s.map_prefix(('w',), m.w) == 'x'
  d = nnx.DiffState(0, nnx.Param)
  assert d.map_prefix(('w',), m.w) and not d.map_prefix(('c',), m.c)


def test_resolve_kwargs():
  def f(a, b=2, c=3):
    return a, b, c

  assert resolve_kwargs(f, (1,), {'c': 5}) == (1, 2, 5)
  assert resolve_kwargs()(f)(1, b=4) == (1, 4, 3)
  with pytest.raises(TypeError, match='could not be resolved to positions'):
    resolve_kwargs(lambda a, *, c=3: 0, (1,), {'c': 5})


def test_jit_partial_binds_and_updates():
  m = M()

  def f(m, x):
    m.c[...] += 1
    return m.w[...] * x

  with pytest.raises(ValueError, match='graph_updates'):
    nnx.jit_partial(f, m)
  g = nnx.jit_partial(f, m, graph_updates=False)
  np.testing.assert_array_equal(g(2.0), [2.0, 2.0])
  np.testing.assert_array_equal(g(3.0), [3.0, 3.0])
  assert float(m.c[...]) == 2.0
  # Tree mode has no graph updates: the default graph_updates is accepted.
  h = nnx.jit_partial(f, m, graph=False)
  np.testing.assert_array_equal(h(4.0), [4.0, 4.0])
  assert float(m.c[...]) == 3.0
  with nnx.set_graph_mode(False):
    h = nnx.jit_partial(f, m)
  np.testing.assert_array_equal(h(5.0), [5.0, 5.0])
  assert float(m.c[...]) == 4.0


def test_jit_trace():
  f = nnx.jit(lambda m, x: m.w[...] * x)
  traced = f.trace(M(), 2.0)
  assert type(traced).__name__ == 'Traced'
  assert [v.aval.shape for v in traced.traced.jaxpr.jaxpr.invars][-1] == ()


def test_transform_metadata_moves_sharding_axis():
  with nnx.use_eager_sharding(False):

    class S(nnx.Module):
      def __init__(self):
        self.w = nnx.Param(jnp.ones((3, 2)), out_sharding=('layers', 'model'))

    m = S()
  seen = []

  @nnx.transform_metadata(in_axes=0, out_axes=0, partition='layers')
  def f(m):
    seen.append(m.w.get_metadata()['out_sharding'])
    return 3

  assert f(m) == 3
  assert seen == [('model',)]
  assert m.w.get_metadata()['out_sharding'] == ('layers', 'model')


def test_split_merge_inputs():
  from flax.nnx.transforms.general import merge_inputs, split_inputs

  m = M()

  @split_inputs
  @jax.jit
  @merge_inputs
  def f(m, x):
    m.c[...] += 1
    return m.w[...] * x, m

  y, out = f(m, 2.0)
  assert out is m and float(m.c[...]) == 1.0
  np.testing.assert_array_equal(y, [2.0, 2.0])

  def add(m):
    m.extra = nnx.Param(jnp.zeros(1))
    return 1

  assert split_inputs(jax.jit(merge_inputs(add)))(m) == 1
  assert hasattr(m, 'extra')
  with pytest.raises(ValueError, match='No update context found'):
    merge_inputs(add)(M())


def test_split_merge_inputs_around_cond_and_vmap():
  from flax.nnx.transforms.general import merge_inputs, split_inputs

  m = M()

  @merge_inputs
  def bump(m):
    m.c[...] += 1

  @merge_inputs
  def keep(m):
    pass

  # the pure arguments travel as positional operands (jax.lax.cond takes
  # no keywords) and the branches return (arguments, output) pairs
  split_inputs(jax.lax.cond)(True, bump, keep, m)
  split_inputs(jax.lax.cond)(False, bump, keep, m)
  assert float(m.c[...]) == 1.0

  class Steps(nnx.Pytree):
    def __init__(self):
      self.i = nnx.Variable(jnp.arange(4))
      self.n = nnx.Variable(jnp.zeros(4))

  s = Steps()

  # vmap's out_axes apply to the (arguments, output) pair
  @split_inputs
  @functools.partial(jax.vmap, in_axes=(0,), out_axes=((0,), None))
  @merge_inputs
  def step(s):
    split_inputs(jax.lax.cond)(s.i[...] % 2 == 0, merge_inputs(inc), keep, s)

  def inc(s):
    s.n[...] += 1

  step(s)
  np.testing.assert_array_equal(s.n[...], [1.0, 0.0, 1.0, 0.0])
  with pytest.raises(TypeError, match='unexpected keyword'):
    split_inputs(jax.jit(bump))(m=m)


def test_pmap_static_and_donated_arguments():
  m = M()

  def f(m, x, n):
    return m.w[...] * x * n

  n_dev = jax.local_device_count()
  x = jnp.arange(float(n_dev))
  m2 = nnx.vmap(lambda _: M(), in_axes=0)(x)
  y = nnx.pmap(f, in_axes=(0, 0, None), static_broadcasted_argnums=(2,))(
    m2, x, 3
  )
  np.testing.assert_array_equal(y[:, 0], x * 3)
  with pytest.raises(ValueError, match='both static'):
    nnx.pmap(f, static_broadcasted_argnums=1, donate_argnums=1)
  del m


def test_cached_partial_is_graph_mode_only():
  m = M()

  def f(m, x):
    m.c[...] += 1
    return m.w[...] * x

  g = nnx.cached_partial(nnx.jit(f), m)
  np.testing.assert_array_equal(g(2.0), [2.0, 2.0])
  assert float(m.c[...]) == 1.0
  for kw in ({'graph': False}, {'graph_updates': False}):
    with pytest.raises(ValueError, match='graph-mode-only'):
      nnx.cached_partial(nnx.jit(f), m, **kw)


def test_cached_partial_binds_one_copy_sharing_the_variables():
  m = stand_in_layers.Linear(2, 3, rngs=nnx.Rngs(0))
  seen = []

  @nnx.jit
  def f(bound, passed):
    seen.append((bound is passed, bound.kernel is passed.kernel))
    bound.kernel[...] += 1
    return bound

  g = nnx.cached_partial(f, m)
  kernel = m.kernel[...]
  first = g(m)
  assert seen == [(False, True)]
  assert first is not m and first.kernel is m.kernel
  np.testing.assert_array_equal(m.kernel[...], kernel + 1)
  assert g(m) is first  # the same copy on every call
  # the copy was taken when the partial was made: a Variable replaced on
  # the original later is not seen, one added to the copy is
  m.kernel = nnx.Param(jnp.zeros((2, 3)))
  first.extra = nnx.Param(jnp.ones(1))
  again = g(m)
  assert again.kernel is not m.kernel and hasattr(again, 'extra')


def test_cached_partial_refuses_structure_changes_inside():
  m = stand_in_layers.Linear(2, 3, rngs=nnx.Rngs(0))

  @nnx.jit
  def add(bound):
    bound.new = nnx.Param(jnp.ones(1))

  @nnx.jit
  def replace(bound):
    bound.kernel = nnx.Param(jnp.zeros((2, 3)))

  for f in (add, replace):
    with pytest.raises(ValueError, match='mutated inside the transformation'):
      nnx.cached_partial(f, m)()
  assert not hasattr(m, 'new') and float(m.kernel[...].sum()) != 0.0


def test_vmap_adds_the_partition_axis_once_per_shared_variable():
  class S(nnx.Module):
    def __init__(self, rngs):
      self.w = nnx.Param(rngs.params.normal((2,)), out_sharding=('a',))

  metadata = {nnx.PARTITION_NAME: 'layers'}
  with nnx.use_eager_sharding(False):

    @nnx.vmap(in_axes=0, out_axes=0, transform_metadata=metadata)
    def make(k):
      s = S(nnx.Rngs(k))
      return s, s

    a, b = make(jax.random.split(jax.random.key(0), 3))
  assert a is b
  assert a.w.get_metadata()['out_sharding'] == ('layers', 'a')
  assert a.w[...].shape == (3, 2)


def test_transforms_take_their_options_before_the_function():
  grad_of = nnx.grad(argnums=1)
  g = grad_of(lambda a, b: a * b * b)(2.0, 3.0)
  assert float(g) == 12.0
  double = nnx.vmap(in_axes=0)(lambda x: 2 * x)
  np.testing.assert_array_equal(double(jnp.arange(3.0)), [0.0, 2.0, 4.0])
  remat_f = nnx.remat(f=lambda x: x + 1)
  assert float(remat_f(1.0)) == 2.0


@pytest.mark.parametrize('name', ['grad', 'value_and_grad'])
def test_reduce_axes_is_refused(name):
  class W(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.array(2.0))

  transform = getattr(nnx, name)
  with pytest.raises(NotImplementedError, match='reduce_axes argument to'):
    transform(lambda m: m.w * m.w, reduce_axes=('batch',))(W())
  # An empty reduce_axes is the default and works.
  g = nnx.grad(lambda m: m.w * m.w, reduce_axes=())(W())
  assert float(g['w'][...]) == 4.0


def test_vjp_reduce_axes_is_refused():
  with pytest.raises(NotImplementedError, match='reduce_axes argument to vjp'):
    nnx.vjp(lambda x: x * 2, jnp.ones(2), reduce_axes=('b',), graph=False)
