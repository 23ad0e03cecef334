"""Shared Variables in the pytree modes of the NNX transforms
(graph=True with graph_updates=False, and graph=False)."""

import jax.numpy as jnp
import pytest

from flax import nnx

NO_UPDATES = dict(graph=True, graph_updates=False)


class Shared(nnx.Module):
  def __init__(self, share=True):
    self.a = nnx.Param(jnp.ones(3))
    if share:
      self.b = self.a


def bump(m):
  m.a[...] = m.a[...] + 1
  return jnp.sum(m.b[...])


def bump_carry(m):
  m.a[...] = m.a[...] + 1
  return m


CALLS = {
  'vmap': lambda m, g: nnx.vmap(bump, in_axes=None, axis_size=2, **g)(m),
  'cond': lambda m, g: nnx.cond(True, bump, bump, m, **g),
  'switch': lambda m, g: nnx.switch(0, [bump, bump], m, **g),
  'checkify': lambda m, g: nnx.checkify(bump, **g)(m)[1],
}


@pytest.mark.parametrize('name', sorted(CALLS))
def test_shared_references_cross_without_graph_updates(name):
  m = Shared()
  out = CALLS[name](m, NO_UPDATES)
  assert m.b is m.a
  assert m.a[...].tolist() == [2.0, 2.0, 2.0]
  assert out.shape == ((2,) if name == 'vmap' else ())
  assert jnp.all(out == 6.0)


@pytest.mark.parametrize('name', sorted(CALLS))
def test_shared_references_are_refused_in_tree_mode(name):
  m = Shared()
  with pytest.raises(ValueError, match=r'Duplicate Param(.|\n)*\.b'):
    CALLS[name](m, dict(graph=False))
  assert m.a[...].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize('loop', ['while_loop', 'fori_loop'])
def test_loops_carry_shared_references(loop):
  m = Shared()
  if loop == 'while_loop':
    out = nnx.while_loop(lambda m: m.a[0] < 3, bump_carry, m, **NO_UPDATES)
  else:
    out = nnx.fori_loop(0, 2, lambda i, m: bump_carry(m), m, **NO_UPDATES)
  assert out is not m and out.b is out.a
  assert out.a[...].tolist() == [3.0, 3.0, 3.0]
  assert m.a[...].tolist() == [3.0, 3.0, 3.0] and m.b is m.a
  with pytest.raises(ValueError, match=r'Duplicate Param(.|\n)*\.carry\.b'):
    nnx.while_loop(lambda m: m.a[0] < 3, bump_carry, Shared(), graph=False)


@pytest.mark.parametrize('graph', [True, False])
def test_eval_shape_and_make_jaxpr_refuse_shared_references(graph):
  g = dict(graph=graph, graph_updates=False)
  with pytest.raises(ValueError, match='Duplicate Param'):
    nnx.eval_shape(bump, Shared(), **g)
  with pytest.raises(ValueError, match='Duplicate Param'):
    nnx.make_jaxpr(bump, **g)(Shared())
  jaxpr = nnx.make_jaxpr(lambda m: m.a[...] * 2, **g)(Shared(share=False))
  assert len(jaxpr.jaxpr.invars) == 1


@pytest.mark.parametrize('graph', [True, False])
def test_returning_an_input_variable_is_refused(graph):
  g = dict(graph=graph, graph_updates=False)
  for call in (
    lambda m: nnx.cond(True, lambda m: m, lambda m: m, m, **g),
    lambda m: nnx.vmap(
      lambda m: m, in_axes=None, out_axes=None, axis_size=2, **g
    )(m),
    lambda m: nnx.checkify(lambda m: m, **g)(m),
    lambda m: nnx.eval_shape(lambda m: m, m, **g),
  ):
    with pytest.raises(ValueError, match=r'Duplicate Param(.|\n)*\.out'):
      call(Shared(share=False))


@pytest.mark.parametrize('graph', [True, False])
def test_custom_vjp_refuses_shared_references(graph):
  @nnx.custom_vjp(graph=graph, graph_updates=False)
  def f(m):
    return jnp.sum(m.a[...] * m.b[...])

  # the duplicate is reported first, even before defvjp
  with pytest.raises(ValueError, match=r'Duplicate Param(.|\n)*\.args\[0\]\.b'):
    f(Shared())
  f.defvjp(lambda m: (f(m), None), lambda res, g: (nnx.state(Shared()),))
  with pytest.raises(ValueError, match='Duplicate Param'):
    f(Shared())

  @nnx.custom_vjp(graph=graph, graph_updates=False)
  def g(m):
    return jnp.sum(m.a[...] * 3)

  g.defvjp(lambda m: (g(m), None), lambda res, ct: (nnx.state(Shared(False)),))
  assert g(Shared(share=False)) == 9.0


def test_scan_carries_shared_references_without_graph_updates():
  def step(m, x):
    return m, bump(m) * x

  m = Shared()
  c, ys = nnx.scan(
    step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), **NO_UPDATES
  )(m, jnp.arange(2.0))
  assert ys.tolist() == [0.0, 9.0]
  assert c is not m and c.b is c.a
  assert m.a[...].tolist() == [3.0, 3.0, 3.0] and m.b is m.a
  with pytest.raises(ValueError, match=r'Duplicate Param(.|\n)*\.b'):
    nnx.scan(
      step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), graph=False
    )(Shared(), jnp.arange(2.0))


def test_duplicate_paths_name_positional_arguments():
  # two positional arguments, a tuple and a dict: paths stay .args[i]
  @nnx.custom_vjp(graph=False, graph_updates=False)
  def f(ms, opts):
    return jnp.sum(ms[0].a[...])

  with pytest.raises(ValueError, match=r'\.args\[0\]\[0\]\.b'):
    f((Shared(),), {'k': 1})
  with pytest.raises(ValueError, match=r'\.args\[0\]\.b'):
    nnx.vjp(bump, Shared(), graph=False)
