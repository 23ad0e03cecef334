"""Linen Dropout."""

from collections.abc import Sequence
from typing import Any

from flax.layers import stochastic
from flax.linen import Module, compact, merge_param

Array = Any


class Dropout(Module):
  """Randomly zeroes inputs during training.

  Kept elements are scaled by ``1 / (1 - rate)``. ``deterministic`` must be
  given at construction or at call time (not both); the mask draws from the
  ``rng_collection`` stream (``'dropout'``), so ``apply`` needs
  ``rngs={'dropout': key}`` when it actually drops.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.Dropout(0.5, deterministic=False)
    >>> y = layer.apply({}, jnp.ones(4), rngs={'dropout': jax.random.key(0)})
    >>> set(y.tolist()) <= {0.0, 2.0}
    True

  Attributes:
    rate: the dropout probability (not the keep rate).
    broadcast_dims: dimensions that share the same dropout mask.
    deterministic: if True no dropout is applied (identity).
    rng_collection: the rng stream the mask is drawn from.
  """

  rate: float
  broadcast_dims: Sequence[int] = ()
  deterministic: bool | None = None
  rng_collection: str = 'dropout'

  @compact
  def __call__(
    self, inputs: Array, deterministic: bool | None = None, rng=None
  ) -> Array:
    """Applies a random dropout mask to the input.

    Args:
      inputs: the inputs that should be randomly masked.
      deterministic: if True no dropout is applied; overrides nothing, it
        is merged with the attribute (exactly one must be set).
      rng: an optional PRNG key used instead of ``make_rng``.

    Returns:
      The masked inputs reweighted to preserve mean.
    """
    deterministic = merge_param(
      'deterministic', self.deterministic, deterministic
    )
    if deterministic or self.rate == 0.0:
      return inputs
    # Dropping everything needs no randomness, so no key is drawn for it.
    if rng is None and self.rate != 1.0:
      rng = self.make_rng(self.rng_collection)
    return stochastic.dropout(inputs, self.rate, rng, self.broadcast_dims)
