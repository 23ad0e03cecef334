"""Module.apply takes a bare PRNG key for ``rngs``, as init does."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import errors
from flax import linen as nn


class _Drop(nn.Module):
  @nn.compact
  def __call__(self, x):
    # Dropout at rate 0.5 (flax-linen's tests run without flax-layers).
    keep = jax.random.bernoulli(self.make_rng('dropout'), 0.5, x.shape)
    return jnp.where(keep, x / 0.5, 0.0)


def test_apply_accepts_a_bare_key():
  module = _Drop()
  x = jnp.ones(6)
  variables = module.init(jax.random.key(0), x)
  expected = [0.0, 0.0, 0.0, 0.0, 2.0, 0.0]  # as Flax 0.12.8 gives
  for rngs in (
    jax.random.key(1),
    jax.random.PRNGKey(1),
    {'params': jax.random.key(1)},
    {'dropout': jax.random.key(1)},
  ):
    np.testing.assert_array_equal(
      module.apply(variables, x, rngs=rngs), expected
    )


@pytest.mark.parametrize('rngs', [np.uint32(3), 'abc', [jax.random.key(1)]])
def test_apply_rejects_what_is_not_a_key(rngs):
  module = _Drop()
  x = jnp.ones(6)
  variables = module.init(jax.random.key(0), x)
  with pytest.raises(errors.InvalidRngError, match='RNGs should be of shape'):
    module.apply(variables, x, rngs=rngs)
