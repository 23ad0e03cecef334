"""Decorator transforms keep the graph modes in force when they are made."""

import jax.numpy as jnp
import pytest

from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))


def _grow(m, *_):
  m.extra = nnx.Param(jnp.ones(1))
  return jnp.sum(m.w[...])


def _makers():
  return {
    'jit': (nnx.jit(_grow), lambda t, m: t(m)),
    'grad': (nnx.grad(_grow), lambda t, m: t(m)),
    'value_and_grad': (nnx.value_and_grad(_grow), lambda t, m: t(m)),
    'remat': (nnx.remat(_grow), lambda t, m: t(m)),
    'checkify': (nnx.checkify(_grow), lambda t, m: t(m)),
    'vmap': (
      nnx.vmap(_grow, in_axes=(None, 0)),
      lambda t, m: t(m, jnp.ones(1)),
    ),
    'pmap': (
      nnx.pmap(_grow, in_axes=(None, 0)),
      lambda t, m: t(m, jnp.ones(1)),
    ),
  }


def _grows(makers):
  out = {}
  for name, (t, call) in makers.items():
    m = Model()
    call(t, m)
    out[name] = hasattr(m, 'extra')
  return out


@pytest.mark.parametrize(
  'context',
  [lambda: nnx.set_graph_mode(False), lambda: nnx.set_graph_updates(False)],
)
def test_modes_are_read_when_the_function_is_made(context):
  made_outside = _makers()
  with context():
    made_inside = _makers()
    assert set(_grows(made_outside).values()) == {True}
    assert set(_grows(made_inside).values()) == {False}
  assert set(_grows(made_inside).values()) == {False}
  assert set(_grows(made_outside).values()) == {True}


def test_grad_output_follows_the_mode_it_was_made_with():
  loss = lambda m: jnp.sum(m.w[...] * 2)  # noqa: E731
  grad = nnx.grad(loss)
  with nnx.set_graph_mode(False):
    tree_grad = nnx.grad(loss)
    assert isinstance(grad(Model()), nnx.State)
    assert isinstance(tree_grad(Model()), Model)
  assert isinstance(tree_grad(Model()), Model)
  assert grad(Model())['w'][...].tolist() == [2.0, 2.0]


def test_scan_and_shard_map_keep_the_mode_they_were_made_in():
  import jax

  class Shared(nnx.Module):
    def __init__(self):
      self.a = nnx.Param(jnp.ones(3))
      self.b = self.a

  mesh = jax.make_mesh((1,), ('d',), devices=jax.devices()[:1])
  with nnx.set_graph_mode(False):
    scan = nnx.scan(
      lambda m, x: (m, x), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0)
    )
    smap = nnx.shard_map(
      lambda m: m.a[...].sum(),
      mesh=mesh,
      in_specs=(jax.P(),),
      out_specs=jax.P(),
    )
  # made in tree mode: a shared Variable is the Duplicate error
  with pytest.raises(ValueError, match='Duplicate'):
    scan(Shared(), jnp.ones(2))
  with pytest.raises(ValueError, match='Duplicate'):
    smap(Shared())
