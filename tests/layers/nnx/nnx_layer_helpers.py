"""Shared helpers of the NNX layer tests."""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from flax import traverse_util


def flat_state(model, *filters):
  """``{'a/b': array}`` of the model's state (optionally filtered)."""
  state = nnx.state(model, *filters)
  pure = state.to_pure_dict()
  return {
    '/'.join(str(k) for k in path): v
    for path, v in traverse_util.flatten_dict(pure).items()
  }


def shapes(model, *filters):
  """``{'a/b': (shape, dtype_name)}`` of the model's state."""
  return {
    k: (tuple(jnp.shape(v)), str(jnp.asarray(v).dtype))
    for k, v in flat_state(model, *filters).items()
  }


def param_key(seed, n):
  """The key ``nnx.Rngs(seed).params()`` returns on its ``n``-th call."""
  return jax.random.fold_in(jax.random.key(seed), n)


def assert_close(a, b, rtol=1e-5, atol=1e-5):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
