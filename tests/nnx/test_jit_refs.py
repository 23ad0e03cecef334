"""nnx.jit returning jax.Refs: the passed Refs come back as themselves."""

import jax
import jax.numpy as jnp
import pytest

from flax import nnx


@nnx.dataclass
class Box(nnx.Pytree):
  r: jax.Ref = nnx.data()


def test_graph_mode_returns_input_ref_and_new_ref():
  r = jax.new_ref(jnp.array(1.0))

  @nnx.jit
  def g(r):
    r[...] += 1.0
    return jax.new_ref(jnp.array(10.0)), r

  for _ in range(2):  # the second call reuses the compiled entry
    new, same = g(r)
    assert same is r
    assert isinstance(new, jax.Ref) and float(new[...]) == 10.0
  assert float(r[...]) == 3.0


def test_graph_mode_ref_in_containers_and_with_modules():
  r = jax.new_ref(jnp.array(1.0))
  box = Box(r=jax.new_ref(jnp.array(2)))
  out = nnx.jit(lambda b, r: (b, {'a': r, 'b': [r]}, jax.new_ref(jnp.ones(2))))(
    box, r
  )
  assert out[0] is box
  assert out[1]['a'] is r and out[1]['b'][0] is r
  assert out[2][...].tolist() == [1.0, 1.0]


def test_compat_jit_returns_input_holding_ref():
  b = Box(r=jax.new_ref(1))

  @nnx.compat.jit
  def inc(box):
    box.r[...] += 1
    return box

  out = inc(b)
  assert out is b and int(out.r[...]) == 2


def test_donated_ref_returned():
  r = jax.new_ref(jnp.array(1.0))
  assert nnx.jit(lambda r: r, donate_argnums=0)(r) is r


def test_captured_ref_cannot_be_returned():
  cap = jax.new_ref(jnp.array(5.0))
  # JAX names the user function
  with pytest.raises(
    ValueError, match='function <lambda> at .* mutable array reference'
  ):
    nnx.jit(lambda x: cap)(jnp.ones(()))


def test_eval_shape_returns_the_input_ref():
  r = jax.new_ref(jnp.array(1.0))
  assert nnx.jit(lambda r: r).eval_shape(r) is r


@pytest.mark.parametrize('value', ['ref', 'box'])
def test_tree_mode_refuses_returning_refs(value):
  r = jax.new_ref(jnp.array(1.0))
  arg = r if value == 'ref' else Box(r=r)
  with pytest.raises(
    ValueError, match='function <lambda> at .* mutable array reference'
  ):
    nnx.jit(lambda a: a, graph=False)(arg)
