"""Variable metadata set inside a transform without graph updates comes
back to the input Variable (tree mode and graph_updates=False)."""

import jax.numpy as jnp
import pytest

from flax import nnx

MODES = [{'graph': False}, {'graph_updates': False}]


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(3), tag='a')


def set_tag(m, *rest):
  m.w.set_metadata('tag', 'b')
  return (m.w[...] * 1.0).sum()


CALLS = {
  'vmap': lambda m, kw: nnx.vmap(set_tag, in_axes=(None, 0), **kw)(
    m, jnp.ones(2)
  ),
  'grad': lambda m, kw: nnx.grad(set_tag, **kw)(m),
  'value_and_grad': lambda m, kw: nnx.value_and_grad(set_tag, **kw)(m),
  'cond': lambda m, kw: nnx.cond(True, set_tag, set_tag, m, **kw),
  'switch': lambda m, kw: nnx.switch(0, [set_tag, set_tag], m, **kw),
  'remat': lambda m, kw: nnx.remat(set_tag, **kw)(m),
  'checkify': lambda m, kw: nnx.checkify(set_tag, **kw)(m),
}


@pytest.mark.parametrize('kw', MODES)
@pytest.mark.parametrize('name', sorted(CALLS))
def test_metadata_comes_back(name, kw):
  m = M()
  CALLS[name](m, kw)
  assert m.w.get_metadata()['tag'] == 'b'
  assert m.w[...].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize('kw', MODES)
def test_jit_metadata_comes_back_on_every_call(kw):
  f = nnx.jit(set_tag, **kw)
  for _ in range(2):  # the second module runs the compiled entry only
    m = M()
    f(m)
    assert m.w.get_metadata()['tag'] == 'b'


@pytest.mark.parametrize('kw', MODES)
def test_shard_map_metadata_comes_back(kw):
  import jax

  mesh = jax.make_mesh((1,), ('d',), devices=jax.devices()[:1])
  m = M()
  nnx.shard_map(
    set_tag, mesh=mesh, in_specs=(jax.P(),), out_specs=jax.P(), **kw
  )(m)
  assert m.w.get_metadata()['tag'] == 'b'


def test_graph_mode_with_updates_jit_keeps_outer_metadata():
  m = M()
  nnx.jit(set_tag)(m)
  assert m.w.get_metadata()['tag'] == 'a'


def test_eval_shape_leaves_metadata():
  m = M()
  nnx.eval_shape(set_tag, m, graph=False)
  assert m.w.get_metadata()['tag'] == 'a'


@pytest.mark.parametrize('loop', ['fori', 'while'])
def test_tree_mode_loop_metadata_change_is_jax_carry_error(loop):
  def body(i, m):
    m.w.set_metadata('tag', 'b')
    return m

  with pytest.raises(TypeError, match='must have the same pytree structure'):
    if loop == 'fori':
      nnx.fori_loop(0, 2, body, M(), graph=False)
    else:
      nnx.while_loop(lambda m: False, lambda m: body(0, m), M(), graph=False)
