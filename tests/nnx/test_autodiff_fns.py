"""The callables nnx.grad / vjp / jvp / remat / custom_vjp run inside the
JAX transforms, the custom_vjp wrapper classes per mode, and nnx.remat in
every mode."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx.transforms import autodiff


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.n = nnx.BatchStat(jnp.array(0.0))


def test_simple_fns_run_the_function_on_fresh_objects():
  m = M()

  def loss(m, x):
    m.n[...] += 1.0
    return jnp.sum(m.w[...] * x), 'aux'

  for cls in (
    autodiff.SimpleGradFn,
    autodiff.SimpleVjpFn,
    autodiff.SimpleJvpFn,
  ):
    fn = cls(loss, True, False)
    out, (aux, updates) = fn(m, 2.0)
    assert float(out) == 6.0 and aux == 'aux'
    assert [float(u) if u.ndim == 0 else u.tolist() for u in updates] == [
      1.0,
      [1.0, 2.0],
    ]
  assert float(m.n[...]) == 0.0  # the inputs themselves are untouched
  out, updates = autodiff.SimpleRematFn(lambda m: m.w[...] * 2, True)(m)
  np.testing.assert_allclose(out, [2.0, 4.0])
  with pytest.raises(ValueError, match='Duplicate Param'):
    autodiff.SimpleRematFn(lambda m: m.w, False)(m)


def test_grad_fn_in_graph_mode():
  m = M()
  g = nnx.grad(lambda m: jnp.sum(m.w[...] ** 2))(m)
  np.testing.assert_allclose(g['w'][...], [2.0, 4.0])
  # GradFn is what jax.grad differentiates: its out_static records the
  # aux structure and graph changes of the last trace
  fn = autodiff.GradFn(lambda m: jnp.sum(m.w[...]), False, None)
  assert fn.has_aux is False and fn.out_static is None


@pytest.mark.parametrize(
  'kw', [dict(), dict(graph=False), dict(graph_updates=False)]
)
def test_remat_modes(kw):
  def f(m, x, k):
    m.n[...] += 1.0
    return jnp.sum(jnp.sin(m.w[...] * x)) * k

  m = M()
  r = nnx.remat(f, static_argnums=2, **kw)
  expected = float(jnp.sum(jnp.sin(jnp.array([2.0, 4.0]))) * 3)
  np.testing.assert_allclose(r(m, 2.0, 3), expected, rtol=1e-6)
  assert float(m.n[...]) == 1.0

  def add(m):
    m.z = nnx.Param(jnp.ones(1))
    return m.w[...]

  nnx.remat(add, **kw)(m)
  assert hasattr(m, 'z') == (kw == {})
  if kw:
    with pytest.raises(ValueError, match='Duplicate BatchStat'):
      nnx.remat(lambda m: m, **kw)(M())
  else:
    m2 = M()
    assert nnx.remat(lambda m: m)(m2) is m2


@pytest.mark.parametrize(
  'kw, cls',
  [
    (dict(), 'CustomVjp'),
    (dict(graph=False), 'SimpleCustomVjp'),
    (dict(graph_updates=False), 'SimpleCustomVjp'),
  ],
)
def test_custom_vjp_classes_and_keywords(kw, cls):
  @nnx.custom_vjp(**kw)
  def f(x, k=2.0):
    return x * k

  if cls == 'CustomVjp':
    # graph mode with updates: g is (input updates cotangent, out cotangent)
    bwd = lambda res, g: (g[1] * 10, 0.0)  # noqa: E731
  else:
    bwd = lambda res, g: (g * 10, 0.0)  # noqa: E731
  f.defvjp(lambda x, k: (x * k, None), bwd)
  assert type(f).__name__ == cls
  np.testing.assert_allclose(f(2.0, k=4.0), 8.0)
  np.testing.assert_allclose(jax.grad(lambda x: f(x, k=3.0))(1.0), 10.0)


def test_simple_custom_vjp_with_modules():
  for kw in (dict(graph=False), dict(graph_updates=False)):

    @nnx.custom_vjp(**kw)
    def f(m, x):
      return jnp.sum(m.w[...] * x)

    def fwd(m, x):
      return f(m, x), (m, x)

    def bwd(res, g):
      m, x = res
      return jax.tree.map(lambda v: v * 0 + 7.0 * g, m), g * 3.0

    f.defvjp(fwd, bwd)
    assert isinstance(f, autodiff.SimpleCustomVjp)
    gm, gx = nnx.grad(f, argnums=(0, 1), graph=False)(M(), 2.0)
    np.testing.assert_allclose(gm.w[...], [7.0, 7.0])
    assert float(gx) == 3.0


def test_custom_vjp_symbolic_zeros():
  f = nnx.custom_vjp(lambda x: x * 2, graph=False)
  f.defvjp(
    lambda x: (x.value * 2, None), lambda r, g: (g * 5,), symbolic_zeros=True
  )
  assert float(jax.grad(f)(1.0)) == 5.0
  g = nnx.custom_vjp(lambda x: x * 2)
  with pytest.raises(ValueError, match='symbolic_zeros'):
    g.defvjp(lambda x: (x, None), lambda r, g: (g,), symbolic_zeros=True)


def test_custom_vjp_graph_mode_rules_and_fwd_check():
  m = M()

  @nnx.custom_vjp
  def f(m, x):
    return jnp.sum(m.w[...] * x)

  def fwd(m, x):
    return f(m, x), (m.w[...], x)

  def bwd(res, g):
    w, x = res
    _, g_out = g  # (input updates cotangent, output cotangent)
    return nnx.State({'w': nnx.Param(x * g_out * 2.0 + 0 * w)}), w.sum() * g_out

  f.defvjp(fwd, bwd)
  assert isinstance(f, autodiff.CustomVjp)
  gm, gx = nnx.grad(f, argnums=(0, 1))(m, 3.0)
  np.testing.assert_allclose(gm['w'][...], [6.0, 6.0])
  assert float(gx) == 3.0

  @nnx.custom_vjp
  def h(m):
    return jnp.sum(m.w[...])

  h.defvjp(lambda m: jnp.sum(m.w[...]), bwd)
  with pytest.raises(ValueError, match='must return a pair'):
    nnx.grad(h)(m)


@pytest.mark.parametrize('kw', [{}, {'graph': False}, {'graph_updates': False}])
def test_custom_vjp_static_argument_comes_first_in_bwd(kw):
  # As jax.custom_vjp: bwd(*static_args, res, g), tangents only for the
  # other arguments; in graph mode the input-update cotangents leave the
  # static argument out too (values checked against Flax 0.12.8).
  seen = []

  class Foo(nnx.Module):
    def __init__(self, x, y):
      self.x = nnx.Param(x)
      self.y = nnx.Param(y)

  @nnx.custom_vjp(nondiff_argnums=(0,), **kw)
  def h(n, m, z):
    return jnp.sum(m.x[...] * n * z)

  def h_fwd(n, m, z):
    return h(n, m, z), (m.x[...], z)

  def h_bwd(n, res, g):
    x, z = res
    if kw:
      seen.append((n, None))
      return Foo(g * n * z, g * 0), g * n * x
    inputs_g, out_g = g
    seen.append((n, len(inputs_g)))
    return nnx.State(dict(x=out_g * n * z, y=out_g * 0)), out_g * n * x

  h.defvjp(h_fwd, h_bwd)
  m = Foo(jnp.array(1.0), jnp.array(2.0))
  gm, gz = nnx.grad(h, argnums=(1, 2))(3.0, m, 5.0)
  assert seen == [(3.0, None if kw else 2)]
  assert float(gm['x'][...]) == 15.0 and float(gm['y'][...]) == 0.0
  assert float(gz) == 3.0


def test_eager_grad_does_not_grow_the_cached_filter_masks():
  # every call of the same nnx.grad reuses the filter mask of the model's
  # cached flat view (no new cache entry, no leak per call)
  from flax.nnx import graphlib

  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(3))
      self.s = nnx.BatchStat(jnp.zeros(()))

  m = M()
  g = nnx.grad(lambda m: (m.w[...] ** 2).sum())
  g(m)
  before = len(graphlib.flat_view(m).masks)
  for _ in range(5):
    grads = g(m)
  assert len(graphlib.flat_view(m).masks) == before
  assert list(grads.keys()) == ['w']
  # a new nnx.grad of the same filter on every call (an eager loop)
  for _ in range(5):
    nnx.grad(lambda m: (m.w[...] ** 2).sum())(m)
    nnx.grad(
      lambda m: (m.w[...] ** 2).sum(), argnums=nnx.DiffState(0, nnx.Param)
    )(m)
  assert len(graphlib.flat_view(m).masks) == before
