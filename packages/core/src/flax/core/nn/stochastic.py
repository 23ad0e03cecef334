"""Functional dropout."""

import jax
import jax.numpy as jnp
from jax import lax

from flax.core.scope import Scope


def dropout(
  scope: Scope, inputs, rate: float, deterministic: bool = False, rng=None
):
  """Zeroes each element with probability ``rate`` and rescales the rest.

  Uses ``rng`` or, if None, ``scope.make_rng('dropout')``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import apply, nn
  >>> f = apply(lambda scope, x: nn.dropout(scope, x, 0.5))
  >>> y = f({}, jnp.ones(4), rngs={'dropout': jax.random.key(0)})
  >>> set(y.tolist()) <= {0.0, 2.0}
  True
  """
  if rate < 0.0 or rate >= 1.0:
    if rate == 1.0:
      return jnp.zeros_like(inputs)
    raise ValueError(f'Dropout rate must be in [0, 1], got {rate}.')
  if deterministic or rate == 0.0:
    return inputs
  if rng is None:
    rng = scope.make_rng('dropout')
  keep = jax.random.bernoulli(rng, 1.0 - rate, jnp.shape(inputs))
  return lax.select(keep, inputs / (1.0 - rate), jnp.zeros_like(inputs))
