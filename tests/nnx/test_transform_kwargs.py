"""Keyword arguments of the lifted vmap, pmap and scan."""

import jax.numpy as jnp
import pytest

from flax import nnx

NO_UPDATES = dict(graph=True, graph_updates=False)
TREE = dict(graph=False)


def add(x, y):
  return x + y


def add_kwonly(x, *, y):
  return x + y


@pytest.mark.parametrize('mode', [NO_UPDATES, TREE], ids=['no-updates', 'tree'])
def test_pytree_modes_map_keyword_arguments_over_axis_0(mode):
  assert nnx.vmap(add, **mode)(jnp.ones(2), y=jnp.arange(2.0)).tolist() == [
    1.0,
    2.0,
  ]
  out = nnx.vmap(add_kwonly, **mode)(jnp.ones(2), y=jnp.arange(2.0))
  assert out.tolist() == [1.0, 2.0]
  assert nnx.pmap(add, **mode)(jnp.ones(1), y=jnp.arange(1.0)).tolist() == [1.0]
  with pytest.raises(TypeError, match='positional arguments only'):
    nnx.scan(lambda c, x: (c + x, x), **mode)(jnp.zeros(()), x=jnp.ones(3))


@pytest.mark.parametrize('mode', [NO_UPDATES, TREE], ids=['no-updates', 'tree'])
def test_a_module_given_by_keyword_gets_its_updates(mode):
  class Counter(nnx.Module):
    def __init__(self):
      self.n = nnx.BatchStat(jnp.zeros(2))

  def bump(x, *, m):
    m.n[...] = m.n[...] + x
    return x * 2

  m = Counter()
  out = nnx.vmap(bump, **mode)(jnp.ones(2), m=m)
  assert out.tolist() == [2.0, 2.0]
  assert m.n[...].tolist() == [1.0, 1.0]


def test_graph_mode_resolves_keyword_arguments_to_positions():
  out = nnx.vmap(add, in_axes=(0, None))(jnp.ones(2), y=jnp.arange(3.0))
  assert out.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
  c, ys = nnx.scan(lambda c, x: (c + x, x))(jnp.zeros(()), x=jnp.arange(3.0))
  assert float(c) == 3.0 and ys.tolist() == [0.0, 1.0, 2.0]
  with pytest.raises(TypeError, match='could not be resolved to positions'):
    nnx.vmap(add_kwonly)(jnp.ones(2), y=jnp.arange(2.0))
  with pytest.raises(TypeError, match='positional arguments only'):
    nnx.pmap(add)(jnp.ones(1), y=jnp.arange(1.0))


class W(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(3.0))


def loss(m, x, scale=1.0):
  return jnp.sum(m.w[...] * x) * scale


def loss_kwonly(m, x, *, scale=1.0):
  return jnp.sum(m.w[...] * x) * scale


def test_graph_mode_grad_and_remat_resolve_keywords():
  g = nnx.grad(loss)(W(), jnp.ones(3), scale=2.0)
  assert g.w[...].tolist() == [2.0, 2.0, 2.0]
  gx = nnx.grad(loss, argnums=1)(W(), x=jnp.ones(3))
  assert gx.tolist() == [0.0, 1.0, 2.0]
  assert float(nnx.remat(loss)(W(), jnp.ones(3), scale=2.0)) == 6.0
  # a keyword-only parameter cannot be placed, keywords given or not
  for call in (
    lambda: nnx.grad(loss_kwonly)(W(), jnp.ones(3)),
    lambda: nnx.grad(loss_kwonly)(W(), jnp.ones(3), scale=2.0),
    lambda: nnx.remat(loss_kwonly)(W(), jnp.ones(3)),
    lambda: nnx.vmap(lambda x, *, s=1: x * s)(jnp.ones(2)),
  ):
    with pytest.raises(TypeError, match='could not be resolved to positions'):
      call()


@pytest.mark.parametrize('mode', [NO_UPDATES, TREE], ids=['no-updates', 'tree'])
def test_pytree_mode_grad_passes_keywords_through(mode):
  for f in (loss, loss_kwonly):
    g = nnx.grad(f, **mode)(W(), jnp.ones(3), scale=2.0)
    assert g.w[...].tolist() == [2.0, 2.0, 2.0]
    value, _ = nnx.value_and_grad(f, **mode)(W(), jnp.ones(3), scale=2.0)
    assert float(value) == 6.0


def test_resolve_kwargs():
  from flax.nnx.transforms.transforms import resolve_kwargs

  assert resolve_kwargs(loss, (1,), {'x': 2}) == (1, 2, 1.0)
  assert resolve_kwargs(loss, (1, 2), {}) == (1, 2, 1.0)
  with pytest.raises(TypeError, match='could not be resolved to positions'):
    resolve_kwargs(loss_kwonly, (1, 2), {})


def test_graph_mode_vmap_over_a_module_class_resolves_keywords():
  class Stack(nnx.Module):
    def __init__(self, x, scale=1.0):
      self.w = nnx.Param(x * scale)

  m = nnx.vmap(Stack, in_axes=(0, None))(jnp.arange(2.0), scale=3.0)
  assert m.w[...].tolist() == [0.0, 3.0]
  m = nnx.vmap(Stack)(jnp.arange(2.0))
  assert m.w[...].tolist() == [0.0, 1.0]


def test_graph_mode_takes_functions_with_var_positional_parameters():
  out = nnx.vmap(lambda *xs: xs[0] + xs[1])(jnp.ones(2), jnp.ones(2))
  assert out.tolist() == [2.0, 2.0]
  assert nnx.vmap(lambda x, **kw: x)(jnp.ones(2)).tolist() == [1.0, 1.0]
  assert nnx.grad(lambda *xs: jnp.sum(xs[0]))(jnp.ones(2)).tolist() == [
    1.0,
    1.0,
  ]
  c, ys = nnx.scan(lambda *a: (a[0] + a[1], a[1]))(jnp.zeros(()), jnp.ones(2))
  assert float(c) == 2.0 and ys.tolist() == [1.0, 1.0]
  assert float(nnx.remat(lambda *xs: jnp.sum(xs[0]))(jnp.ones(2))) == 2.0
  with pytest.raises(TypeError, match='could not be resolved to positions'):
    nnx.vmap(lambda x, **kw: x)(jnp.ones(2), y=jnp.ones(2))
