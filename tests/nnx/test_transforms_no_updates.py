"""Transforms without graph updates (graph=False or graph_updates=False):
Variable aliasing errors, dropped structure changes, whole-pytree
differentiation, vjp/jvp modes, static argument hashing, reduce_axes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx.transforms import compilation


class Counter(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(3.0))
    self.count = nnx.BatchStat(jnp.array(0))


NO_UPDATES = [dict(graph=False), dict(graph_updates=False)]


class Linear(nnx.Module):
  """A dense layer of this file (tests-nnx installs no flax-layers)."""

  def __init__(self, din, dout, *, rngs):
    self.kernel = nnx.Param(jax.random.normal(rngs.params(), (din, dout)))
    self.bias = nnx.Param(jnp.zeros((dout,)))

  def __call__(self, x):
    return x @ self.kernel[...] + self.bias[...][None]


@pytest.mark.parametrize('kw', NO_UPDATES)
def test_jit_returning_an_input_variable_is_a_duplicate(kw):
  with pytest.raises(
    ValueError, match=r'Duplicate BatchStat(.|\n)*\.out\.count'
  ):
    nnx.jit(lambda m: m, **kw)(Counter())
  with pytest.raises(ValueError, match=r'Duplicate Param(.|\n)*\.args\[0\]\.w'):
    nnx.jit(lambda m: m.w, **kw)(Counter())
  # a new Module is fine
  out = nnx.jit(lambda m: Counter(), **kw)(Counter())
  np.testing.assert_allclose(out.w[...], [0.0, 1.0, 2.0])


def test_jit_duplicate_inputs():
  m = Counter()
  with pytest.raises(
    ValueError, match=r"Duplicate BatchStat(.|\n)*\.kwargs\['b'\]"
  ):
    nnx.jit(lambda a, b: a.w[...], graph=False)(m, b=m)
  # graph mode handles shared inputs, with or without graph updates
  out = nnx.jit(lambda a, b: a.w[...] + b.w[...], graph_updates=False)(m, m)
  np.testing.assert_allclose(out, [0.0, 2.0, 4.0])


@pytest.mark.parametrize('kw', NO_UPDATES)
def test_jit_structure_changes_stay_inside(kw):
  def add_attr(m):
    m.b = nnx.Param(jnp.ones(2))
    m.count[...] += 1
    return m.w[...]

  def replace_attr(m):
    m.w = nnx.Param(jnp.zeros(3))
    return m.w[...]

  def remove_attr(m):
    del m.count
    return m.w[...]

  m = Counter()
  f = nnx.jit(add_attr, **kw)
  f(m)
  f(m)
  assert not hasattr(m, 'b')
  assert int(m.count[...]) == 2
  np.testing.assert_allclose(nnx.jit(replace_attr, **kw)(m), np.zeros(3))
  np.testing.assert_allclose(m.w[...], [0.0, 1.0, 2.0])
  nnx.jit(remove_attr, **kw)(m)
  assert int(m.count[...]) == 2


def test_jit_structure_changes_with_updates():
  m = Counter()
  nnx.jit(lambda m: setattr(m, 'b', nnx.Param(jnp.ones(2))))(m)
  np.testing.assert_allclose(m.b[...], [1.0, 1.0])


@pytest.mark.parametrize('graph', [True, False])
def test_jit_unhashable_static_argument(graph):
  f = nnx.jit(lambda x, k=1: x * 2, static_argnames=('k',), graph=graph)
  with pytest.raises(ValueError, match='Non-hashable static arguments'):
    f(jnp.ones(2), k=[1])
  g = nnx.jit(lambda x, k: x, static_argnums=1, graph=graph)
  with pytest.raises(ValueError, match="unhashable type: 'dict'"):
    g(jnp.ones(2), {'a': 1})
  np.testing.assert_allclose(f(jnp.ones(2), k=(1,)), [2.0, 2.0])


class WithStats(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.stat = nnx.BatchStat(jnp.array([3.0, 5.0]))
    self.arr = jnp.array([0.5, 2.0])


def _loss(m, x):
  return jnp.sum(m.w[...] * m.stat[...] * m.arr * x)


@pytest.mark.parametrize('kw', NO_UPDATES)
def test_grad_without_updates_differentiates_every_leaf(kw):
  g = nnx.grad(_loss, **kw)(WithStats(), 2.0)
  assert type(g) is WithStats
  w, s, a = jnp.array([1.0, 2.0]), jnp.array([3.0, 5.0]), jnp.array([0.5, 2.0])
  np.testing.assert_allclose(g.w[...], s * a * 2.0)
  np.testing.assert_allclose(g.stat[...], w * a * 2.0)
  np.testing.assert_allclose(g.arr, w * s * 2.0)
  val, (gm, gx) = nnx.value_and_grad(_loss, argnums=(0, 1), **kw)(
    WithStats(), 2.0
  )
  np.testing.assert_allclose(val, _loss(WithStats(), 2.0))
  np.testing.assert_allclose(gm.w[...], s * a * 2.0)
  np.testing.assert_allclose(gx, float(jnp.sum(w * s * a)))
  with pytest.raises(ValueError, match='cannot contain `DiffState`'):
    nnx.grad(_loss, argnums=nnx.DiffState(0, nnx.Param), **kw)(WithStats(), 1.0)


def test_grad_without_updates_int_leaves_and_updates():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.array([1.0, 2.0]))
      self.n = nnx.Variable(jnp.array(1))

  def loss(m):
    m.n[...] += 1
    return jnp.sum(m.w[...] ** 2)

  m = M()
  with pytest.raises(TypeError, match='allow_int'):
    nnx.grad(loss, graph=False)(m)
  g = nnx.grad(loss, graph=False, allow_int=True)(m)
  np.testing.assert_allclose(g.w[...], [2.0, 4.0])
  assert g.n[...].dtype == jax.dtypes.float0
  assert int(m.n[...]) == 2


def test_grad_shared_variables():
  class Shared(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.array([1.0, 2.0]))
      self.s = self.w

  loss = lambda m: jnp.sum(m.w[...] * m.s[...])  # noqa: E731
  g = nnx.grad(loss, graph_updates=False)(Shared())
  assert g.w is g.s
  np.testing.assert_allclose(g.w[...], [2.0, 4.0])
  with pytest.raises(ValueError, match=r'Duplicate Param(.|\n)*\.args\[0\]\.s'):
    nnx.grad(loss, graph=False)(Shared())


@pytest.mark.parametrize('kw', [dict(), dict(graph=True, graph_updates=True)])
def test_vjp_jvp_refuse_graph_updates(kw):
  m = Linear(3, 2, rngs=nnx.Rngs(0))
  x = jnp.ones((2, 3))
  with pytest.raises(NotImplementedError, match='graph_updates'):
    nnx.vjp(lambda m, x: m(x), m, x, **kw)
  with pytest.raises(NotImplementedError, match='graph_updates'):
    nnx.jvp(lambda m, x: m(x), (m, x), (m, x), **kw)


@pytest.mark.parametrize('kw', NO_UPDATES)
def test_vjp_jvp_without_updates(kw):
  m = Linear(3, 2, rngs=nnx.Rngs(0))
  x = jnp.arange(6.0).reshape(2, 3)
  out, vjp_fn = nnx.vjp(lambda m, x: m(x), m, x, **kw)
  np.testing.assert_allclose(out, m(x), rtol=1e-6)
  ct_m, ct_x = vjp_fn(jnp.ones((2, 2)))
  assert type(ct_m) is Linear
  np.testing.assert_allclose(ct_m.bias[...], [2.0, 2.0])
  np.testing.assert_allclose(
    ct_m.kernel[...], jnp.sum(x, 0)[:, None] * jnp.ones((3, 2))
  )
  np.testing.assert_allclose(
    ct_x, jnp.ones((2, 2)) @ m.kernel[...].T, rtol=1e-6
  )
  tangent = jax.tree.map(jnp.ones_like, m)
  y, t = nnx.jvp(lambda m, x: m(x), (m, x), (tangent, jnp.zeros_like(x)), **kw)
  np.testing.assert_allclose(
    t, (jnp.sum(x, 1) + 1.0)[:, None] * jnp.ones((2, 2))
  )


def test_vjp_aux_and_variable_updates():
  c = Counter()

  def f(c):
    c.count[...] += 1
    return jnp.sum(c.w[...] ** 2), c.count[...]

  out, vjp_fn, aux = nnx.vjp(f, c, has_aux=True, graph=False)
  assert int(aux) == 1 and int(c.count[...]) == 1
  (ct,) = vjp_fn(jnp.array(1.0))
  np.testing.assert_allclose(ct.w[...], [0.0, 2.0, 4.0])


def test_reduce_axes_refused_at_decoration_time():
  with pytest.raises(NotImplementedError, match='reduce_axes'):
    nnx.grad(reduce_axes=('batch',))
  with pytest.raises(NotImplementedError, match='reduce_axes'):
    nnx.value_and_grad(reduce_axes=('batch',))
  with pytest.raises(NotImplementedError, match='reduce_axes'):
    nnx.vjp(lambda x: x, jnp.ones(2), reduce_axes=('b',), graph=False)

  @nnx.value_and_grad(reduce_axes=(), has_aux=True)
  def f(x):
    return jnp.sum(x**2), 1

  (v, aux), g = f(jnp.arange(3.0))
  np.testing.assert_allclose(g, [0.0, 2.0, 4.0])
  assert float(v) == 5.0 and aux == 1


@pytest.mark.parametrize('kw', NO_UPDATES + [dict()])
def test_jit_general_path_agrees_with_fast_path(kw):
  # shardings send the call through the general path (no cached entries)
  sharding = jax.sharding.NamedSharding(jax.make_mesh((1,), ('d',)), jax.P())

  def add_attr(m):
    m.b = nnx.Param(jnp.ones(2))
    m.count[...] += 1
    return m.w[...] * 2

  results = []
  for extra in (dict(), dict(in_shardings=sharding)):
    f = nnx.jit(add_attr, **kw, **extra)
    assert f._fast == (not extra and compilation.FAST_PATH)
    m = Counter()
    out = f(m)
    results.append((out.tolist(), int(m.count[...]), hasattr(m, 'b')))
    if kw:
      with pytest.raises(ValueError, match='Duplicate BatchStat'):
        nnx.jit(lambda m: m, **kw, **extra)(Counter())
    else:
      m2 = Counter()
      assert nnx.jit(lambda m: m, **extra)(m2) is m2
  assert results[0] == results[1]
  assert results[0] == ([0.0, 2.0, 4.0], 1, kw == {})


@pytest.mark.parametrize('kw', NO_UPDATES)
@pytest.mark.parametrize('loop', ['while_loop', 'fori_loop'])
def test_loops_keep_variable_identity(kw, loop):
  def run(body, carry):
    if loop == 'while_loop':
      return nnx.while_loop(lambda c: c[-1] > 0, body, carry, **kw)
    return nnx.fori_loop(0, 2, lambda i, c: body(c), carry, **kw)

  def replace(c):
    m, n = c
    m.count = nnx.BatchStat(m.count[...] + 1)
    return m, n - 1

  def swap(c):
    (a, b), n = c
    return (b, a), n - 1

  def in_place(c):
    m, n = c
    m.count[...] += 1
    return m, n - 1

  with pytest.raises(ValueError, match=f'{loop} Variable identity must be'):
    run(replace, (Counter(), 2))
  pair = (nnx.Param(jnp.ones(2)), nnx.Param(jnp.zeros(2)))
  with pytest.raises(ValueError, match=f'{loop} Variable identity must be'):
    run(swap, (pair, 2))
  m = Counter()
  out, _ = run(in_place, (m, 2))
  assert int(m.count[...]) == 2 and int(out.count[...]) == 2
