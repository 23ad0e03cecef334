"""nnx.Rngs rejects values that are not seeds or keys when it is built."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


@pytest.mark.parametrize(
  'value',
  ['abc', 3.0, np.int32(3), jnp.array(3), [1, 2], jnp.float32(2.0)],
  ids=['str', 'float', 'np-int', 'int-array', 'list', 'float-array'],
)
def test_invalid_rng_value_raises_at_construction(value):
  with pytest.raises(ValueError, match='Invalid rng value'):
    nnx.Rngs(value)
  with pytest.raises(ValueError, match='Invalid rng value'):
    nnx.Rngs(params=value)


def test_valid_seeds_and_keys():
  assert nnx.Rngs(3).default.key.shape == ()
  assert nnx.Rngs(True).default.key.shape == ()
  key = jax.random.key(1)
  assert nnx.Rngs(params=key).params.key[...] == key
  raw = jnp.array([0, 1], dtype=jnp.uint32)
  rngs = nnx.Rngs(raw)
  assert rngs.default.key.shape == ()
  np.testing.assert_array_equal(
    jax.random.key_data(rngs.default.key[...]), [0, 1]
  )
  assert 'Rngs' in repr(nnx.Rngs(0))
