"""Lifted transforms in graph and tree mode, compared with plain JAX."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


class Dense(nnx.Module):
  def __init__(self, din, dout, rngs):
    self.w = nnx.Param(jax.random.normal(rngs.params(), (din, dout)))
    self.b = nnx.Param(jnp.zeros(dout))
    self.count = nnx.BatchStat(jnp.array(0))

  def __call__(self, x):
    self.count[...] += 1
    y = x @ self.w
    return y + jnp.broadcast_to(self.b[...], y.shape)  # no rank promotion


def _affine(x, w, b):
  """``x @ w + b`` in NumPy (which broadcasts ranks freely)."""
  return np.asarray(x) @ np.asarray(w) + np.asarray(b)


def loss_ref(w, b, x):
  y = x @ w
  return jnp.mean((y + jnp.broadcast_to(b, y.shape)) ** 2)


@pytest.mark.parametrize('graph', [True, False])
def test_jit_updates_and_numerics(graph):
  m = Dense(2, 3, nnx.Rngs(0))
  x = jnp.arange(4.0).reshape(2, 2)
  f = nnx.jit(lambda m, x: m(x), graph=graph)
  y = f(m, x)
  np.testing.assert_allclose(y, _affine(x, m.w[...], m.b[...]), rtol=1e-6)
  f(m, x)
  assert int(m.count[...]) == 2


def test_jit_structure_change_and_outputs():
  m = Dense(2, 3, nnx.Rngs(0))

  @nnx.jit
  def f(m):
    m.extra = nnx.BatchStat(jnp.ones(2))
    return m, Dense(1, 1, nnx.Rngs(1))

  same, new = f(m)
  assert same is m
  np.testing.assert_allclose(m.extra[...], [1.0, 1.0])
  assert new.w[...].shape == (1, 1)


def test_jit_static_and_methods():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.array(2.0))

    @nnx.jit(static_argnums=(2,))
    def scale(self, x, k):
      return self.w * x * k

  m = M()
  assert float(m.scale(3.0, 4)) == 24.0

  class N(nnx.Module):
    def f(self):
      return 1

  with pytest.raises(ValueError, match='does not support bound methods'):
    nnx.jit(N().f)


def test_tree_mode_shared_variable_error():
  m = Dense(2, 3, nnx.Rngs(0))
  m.alias = m.w
  with pytest.raises(ValueError, match='Duplicate Param'):
    nnx.jit(lambda m: m.w[...], graph=False)(m)
  # graph mode handles it
  assert nnx.jit(lambda m: m.alias[...])(m).shape == (2, 3)


@pytest.mark.parametrize('graph', [True, False])
def test_grad_matches_jax(graph):
  m = Dense(2, 3, nnx.Rngs(0))
  x = jnp.arange(4.0).reshape(2, 2)
  loss = lambda m, x: jnp.mean(m(x) ** 2)  # noqa: E731
  if not graph:
    # tree mode differentiates every leaf: the int count needs allow_int
    with pytest.raises(TypeError, match='allow_int'):
      nnx.grad(loss, graph=False)(m, x)
  g = nnx.grad(loss, graph=graph, allow_int=not graph)(m, x)
  gw, gb = jax.grad(loss_ref, argnums=(0, 1))(m.w[...], m.b[...], x)
  np.testing.assert_allclose(g['w'][...] if graph else g.w[...], gw, rtol=1e-5)
  np.testing.assert_allclose(g['b'][...] if graph else g.b[...], gb, rtol=1e-5)
  assert int(m.count[...]) == 1


def test_value_and_grad_diffstate_aux():
  m = Dense(2, 3, nnx.Rngs(0))
  x = jnp.ones((1, 2))

  def loss(m, x):
    y = m(x)
    return jnp.sum(y), y

  (v, aux), g = nnx.value_and_grad(
    loss, argnums=nnx.DiffState(0, nnx.PathContains('b')), has_aux=True
  )(m, x)
  assert set(g.keys()) == {'b'}
  np.testing.assert_allclose(g['b'][...], jnp.ones(3))
  np.testing.assert_allclose(v, jnp.sum(aux))
  with pytest.raises(ValueError, match='DiffState'):
    nnx.grad(loss, argnums=nnx.DiffState(0, ...), graph=False)(m, x)


@pytest.mark.parametrize('graph', [True, False])
def test_vmap(graph):
  m = Dense(2, 3, nnx.Rngs(0))
  x = jnp.ones((5, 2))
  y = nnx.vmap(lambda m, x: m(x), in_axes=(None, 0), graph=graph)(m, x)
  np.testing.assert_allclose(y, _affine(x, m.w[...], m.b[...]), rtol=1e-6)


def test_vmap_creates_stacked_modules():
  @nnx.split_rngs(splits=4)
  @nnx.vmap(in_axes=(0,), out_axes=0)
  def create(rngs):
    return Dense(2, 2, rngs)

  stacked = create(nnx.Rngs(0))
  assert stacked.w[...].shape == (4, 2, 2)
  assert not np.allclose(stacked.w[...][0], stacked.w[...][1])


def test_scan_over_stacked_layers():
  @nnx.split_rngs(splits=3)
  @nnx.vmap(in_axes=(0,), out_axes=0)
  def create(rngs):
    return Dense(2, 2, rngs)

  stacked = create(nnx.Rngs(0))

  @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
  def forward(x, layer):
    return layer(x)

  x = jnp.ones((1, 2))
  y = forward(x, stacked)
  ref = x
  for i in range(3):
    ref = _affine(ref, stacked.w[...][i], stacked.b[...][i])
  np.testing.assert_allclose(y, ref, rtol=1e-5)
  np.testing.assert_array_equal(stacked.count[...], [1, 1, 1])


def test_cond_switch_loops():
  m = Dense(2, 2, nnx.Rngs(0))
  x = jnp.ones((2,))
  y = nnx.cond(True, lambda m, x: m(x), lambda m, x: x, m, x)
  np.testing.assert_allclose(y, _affine(x, m.w[...], m.b[...]), rtol=1e-6)
  assert int(m.count[...]) == 1
  y = nnx.switch(1, [lambda m, x: x, lambda m, x: -x], m, x)
  np.testing.assert_allclose(y, -x)

  def body(i, c):
    m, x = c
    return m, m(x)

  _, y = nnx.fori_loop(0, 3, body, (m, x))
  ref = x
  for _ in range(3):
    ref = _affine(ref, m.w[...], m.b[...])
  np.testing.assert_allclose(y, ref, rtol=1e-5)
  assert int(m.count[...]) == 4
  _, n = nnx.while_loop(lambda c: c[1] < 5, lambda c: (c[0], c[1] + 1), (m, 0))
  assert int(n) == 5


def test_eval_shape_and_remat():
  abstract = nnx.eval_shape(lambda: Dense(3, 4, nnx.Rngs(0)))
  assert abstract.w.get_value().shape == (3, 4)
  assert isinstance(abstract.w.get_value(), jax.ShapeDtypeStruct)
  m = Dense(2, 2, nnx.Rngs(0))
  g = nnx.grad(lambda m, x: jnp.sum(nnx.remat(lambda m, x: m(x))(m, x)))(
    m, jnp.ones((1, 2))
  )
  np.testing.assert_allclose(g['b'][...], jnp.ones(2))


def test_vjp_jvp_graph_mode():
  m = Dense(2, 3, nnx.Rngs(0))
  x = jnp.ones((1, 2))
  with pytest.raises(NotImplementedError, match='graph_updates'):
    nnx.vjp(lambda m, x: jnp.sum(m(x)), m, x)
  out, vjp_fn = nnx.vjp(lambda m, x: jnp.sum(m(x)), m, x, graph_updates=False)
  m_g, x_g = vjp_fn(jnp.ones_like(out))
  assert type(m_g) is Dense
  np.testing.assert_allclose(m_g.b[...], jnp.ones(3))
  np.testing.assert_allclose(x_g, jnp.sum(m.w[...], axis=1)[None])

  # jvp in graph mode (without graph updates) with a Module tangent.
  class Affine(nnx.Module):
    def __init__(self, w, b):
      self.w, self.b = nnx.Param(w), nnx.Param(b)

    def __call__(self, x):
      return x @ self.w[...] + self.b[...][None]

  a = Affine(m.w[...], jnp.arange(3.0))
  tangent_a = Affine(jnp.ones((2, 3)), jnp.ones(3))
  primal, tangent = nnx.jvp(
    lambda a, x: a(x),
    (a, x),
    (tangent_a, jnp.zeros_like(x)),
    graph=True,
    graph_updates=False,
  )
  np.testing.assert_allclose(primal, x @ m.w[...] + jnp.arange(3.0)[None])
  # Along w = 1, b = 1: x @ ones + 1 = 3 for x = ones((1, 2)).
  np.testing.assert_allclose(tangent, jnp.full((1, 3), 3.0))
