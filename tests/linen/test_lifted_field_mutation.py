"""Mutations through nested lifted transforms of field submodules."""

import jax
import jax.numpy as jnp
import pytest

from flax import linen as nn


def _identity(fn):
  return fn


def _models(outer, middle, inner):
  class Count(nn.Module):
    @inner
    @nn.compact
    def __call__(self, x):
      initialized = self.has_variable('muts', 'v')
      v = self.variable('muts', 'v', lambda: jnp.zeros_like(x))
      if initialized:
        v.value += x
      return x

  class Middle(nn.Module):
    count: nn.Module

    @middle
    @nn.compact
    def __call__(self, x):
      Count(name='own')(x)
      return self.count(x)

  class Outer(nn.Module):
    middle: nn.Module

    @outer
    @nn.compact
    def __call__(self, x):
      return self.middle(x)

  return Outer(Middle(Count()))


@pytest.mark.parametrize(
  'transforms',
  [
    (nn.jit, nn.jit, nn.jit),
    (nn.jit, nn.jit, _identity),
    (nn.remat, nn.remat, nn.remat),
    (nn.remat, nn.jit, _identity),
    (_identity, nn.jit, nn.jit),
  ],
)
def test_field_submodule_mutation_survives_nested_transforms(transforms):
  model = _models(*transforms)
  x = jnp.ones((1,))
  variables = model.init(jax.random.key(0), x)
  _, updated = model.apply(variables, x, mutable=['muts'])
  assert jax.tree_util.tree_map(lambda a: a.tolist(), updated) == {
    'muts': {'middle': {'count': {'v': [1.0]}, 'own': {'v': [1.0]}}}
  }
