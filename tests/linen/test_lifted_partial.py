"""Lifted transforms accept ``functools.partial`` of a Module class."""

import functools

import jax
import jax.numpy as jnp
import pytest
from flax import linen as nn
from linen_test_layers import Dense


class Block(nn.Module):
  features: int
  scale: float = 1.0

  @nn.compact
  def __call__(self, x):
    return Dense(self.features)(x) * self.scale


def _shapes(tree):
  return jax.tree.map(jnp.shape, tree)


@pytest.mark.parametrize(
  'lift',
  [
    lambda t: nn.jit(t),
    lambda t: nn.remat(t),
    lambda t: nn.checkpoint(t),
    lambda t: nn.fold_rngs(t),
    lambda t: nn.map_variables(t, 'params', lambda v: v, init=True),
  ],
)
def test_partial_is_lifted_and_reapplied(lift):
  lifted = lift(functools.partial(Block, features=4))
  assert isinstance(lifted, functools.partial)
  assert issubclass(lifted.func, Block)
  variables = lifted().init(jax.random.key(0), jnp.ones((3, 2)))
  assert _shapes(variables) == {
    'params': {'Dense_0': {'bias': (4,), 'kernel': (2, 4)}}
  }


def test_vmap_of_nested_partial():
  nested = functools.partial(functools.partial(Block, scale=2.0), features=4)
  lifted = nn.vmap(
    nested, variable_axes={'params': 0}, split_rngs={'params': True}
  )
  module = lifted()
  assert module.features == 4 and module.scale == 2.0
  variables = module.init(jax.random.key(0), jnp.ones((3, 2, 5)))
  assert _shapes(variables) == {
    'params': {'Dense_0': {'bias': (3, 4), 'kernel': (3, 5, 4)}}
  }


def test_outer_keywords_win_and_call_keywords_override():
  nested = functools.partial(
    functools.partial(Block, features=4, scale=2.0), scale=3.0
  )
  ones = {
    'params': {'Dense_0': {'kernel': jnp.ones((4, 4)), 'bias': jnp.zeros(4)}}
  }
  y = nn.jit(nested)().apply(ones, jnp.ones((1, 4)))
  assert y.tolist() == [[12.0, 12.0, 12.0, 12.0]]
  assert nn.jit(nested)(features=3).features == 3


def test_methods_with_a_partial_of_a_class():
  class Two(Block):
    def other(self, x):
      return self(x) + 1

  lifted = nn.jit(functools.partial(Two, 4), methods=['other'])
  variables = lifted().init(jax.random.key(0), jnp.ones((1, 2)), method='other')
  assert _shapes(variables)['params']['Dense_0']['kernel'] == (2, 4)


def test_partial_of_a_function_stays_a_lifted_function():
  lifted = nn.jit(functools.partial(Block.__call__))
  assert type(lifted).__name__ == 'function'
