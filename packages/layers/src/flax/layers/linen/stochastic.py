"""Linen Dropout."""

from collections.abc import Sequence
from typing import Any

from flax.layers import stochastic
from flax.linen import Module, compact, merge_param

Array = Any
MaybeFlag = bool | None


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
  deterministic: MaybeFlag = None
  rng_collection: str = 'dropout'

  @compact
  def __call__(
    self, inputs: Array, deterministic: MaybeFlag = None, rng=None
  ) -> Array:
    """Zeroes a random ``rate`` of ``inputs`` and rescales the rest.

    ``deterministic`` must be given here or as the attribute (not both);
    ``rng`` replaces the key drawn from ``rng_collection``.
    """
    off = merge_param('deterministic', self.deterministic, deterministic)
    if off or self.rate == 0.0:
      return inputs
    # Dropping everything needs no randomness, so no key is drawn for it.
    if rng is None and self.rate != 1.0:
      rng = self.make_rng(self.rng_collection)
    return stochastic.dropout(inputs, self.rate, rng, self.broadcast_dims)
