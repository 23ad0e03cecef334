"""Errors of common mistakes with NNX transforms read as JAX's (and Flax
0.12.8's): same class, same phrase, the user function named."""

import jax.numpy as jnp
import pytest

from flax import nnx

MODES = [{}, {'graph': False}, {'graph_updates': False}]


def _add(a, b):
  return a + b


@pytest.mark.parametrize('mode', MODES)
def test_cond_messages_speak_of_cond(mode):
  with pytest.raises(TypeError) as info:
    nnx.cond(True, lambda x: x, lambda x: x[0], jnp.ones(3), **mode)
  text = str(info.value)
  assert text.startswith('cond branches must have equal output types')
  assert 'true_fun is <lambda> at' in text
  assert 'false_fun is <lambda> at' in text
  with pytest.raises(TypeError, match='Pred must be a scalar'):
    nnx.cond(jnp.ones(2), lambda: 1.0, lambda: 2.0, **mode)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize(
  'argnums, text',
  [
    (2, 'argnums=2 requires at least 3 positional arguments'),
    ((1, 3), r'argnums=\(1, 3\) requires at least 4 positional arguments'),
  ],
)
def test_grad_argnums_past_the_arguments(mode, argnums, text):
  for transform in (nnx.grad, nnx.value_and_grad):
    with pytest.raises(
      TypeError, match='differentiating with respect to ' + text
    ):
      transform(_add, argnums=argnums, **mode)(jnp.ones(()), jnp.ones(()))
  with pytest.raises(
    ValueError, match='but got value -3 for len\\(args\\) == 2'
  ):
    nnx.grad(_add, argnums=-3, **mode)(jnp.ones(()), jnp.ones(()))


def test_grad_diffstate_past_the_arguments():
  with pytest.raises(TypeError, match='argnums=2 requires at least 3'):
    nnx.grad(_add, argnums=nnx.DiffState(2, nnx.Param))(
      jnp.ones(()), jnp.ones(())
    )


@pytest.mark.parametrize('in_axes', [(0,), (0, 0, 0), [0, 0]])
def test_vmap_in_axes_not_one_per_argument(in_axes):
  x = jnp.ones(3)
  phrase = 'different types' if type(in_axes) is list else 'different lengths'
  for mode in ({}, {'graph_updates': False}):
    with pytest.raises(ValueError, match='pytree structure error: ' + phrase):
      nnx.vmap(_add, in_axes=in_axes, **mode)(x, x)
  if type(in_axes) is tuple:
    with pytest.raises(ValueError, match=f'len\\(in_axes\\)={len(in_axes)}'):
      nnx.vmap(_add, in_axes=in_axes, graph=False)(x, x)
    with pytest.raises(ValueError, match='pytree structure error'):
      nnx.pmap(_add, in_axes=in_axes)(jnp.ones(1), jnp.ones(1))


def test_tree_mode_vmap_counts_positional_arguments_only():
  with pytest.raises(ValueError, match='len\\(in_axes\\)=2, len\\(args\\)=1'):
    nnx.vmap(_add, in_axes=(0, None), graph=False)(jnp.ones(3), b=jnp.ones(3))


def test_graph_mode_pmap_keyword_argument():
  with pytest.raises(TypeError, match="got an unexpected keyword argument 'b'"):
    nnx.pmap(_add)(jnp.ones(1), b=jnp.ones(1))


@pytest.mark.parametrize('upper', [2, jnp.array(2)])
def test_fori_loop_carry_structure_change_is_scans_type_error(upper):
  def body(i, m):
    m.b = nnx.Param(jnp.ones(1))
    return m

  m = nnx.Module()
  m.w = nnx.Param(jnp.ones(2))
  with pytest.raises(
    TypeError,
    match='scan body function carry input and carry output must have the '
    'same pytree structure, but they differ',
  ):
    nnx.fori_loop(0, upper, body, m)
