"""Stochastic NNX layers: ``Dropout``."""

from __future__ import annotations

import typing as tp

import jax

from flax import nnx
from flax.nnx import Module as Module
from flax.layers import stochastic as _math
from flax.layers.nnx._utils import first_from
from flax.layers.nnx._utils import fork_stream
from flax.layers.nnx._utils import key_from
from flax.layers.nnx._utils import optional_data


class Dropout(nnx.Module):
  """Randomly zeroes inputs with probability ``rate`` while training.

  Kept values are scaled by ``1 / (1 - rate)``. ``deterministic=True``
  (set by ``Module.eval()``) makes the layer the identity.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.Dropout(0.5, rngs=nnx.Rngs(0))
  >>> y = layer(jnp.ones((3, 4)))
  >>> bool(((y == 0) | (y == 2)).all())
  True
  >>> layer.eval()
  >>> layer(jnp.ones((1, 2)))
  Array([[1., 1.]], dtype=float32)

  Args:
    rate: the dropout probability (not the keep rate).
    broadcast_dims: dimensions that share one mask value, e.g. ``[0]`` for
      the same mask across the batch.
    deterministic: if True, no dropout is applied.
    rng_collection: the rng stream used for the masks (default
      ``'dropout'``).
    rngs: an ``nnx.Rngs``, an ``RngStream``, or None (then ``rngs`` must be
      passed when calling).
  """

  def __init__(
    self,
    rate: float,
    *,
    broadcast_dims: tp.Sequence[int] = (),
    deterministic: bool = False,
    rng_collection: str = 'dropout',
    rngs=None,
  ):
    self.rate = rate
    self.broadcast_dims = tuple(broadcast_dims)
    self.deterministic = deterministic
    self.rng_collection = rng_collection
    self.rngs = optional_data(fork_stream(rngs, rng_collection))

  def set_view(self, deterministic: bool | None = None):
    """Class method used by ``nnx.view``.

    Args:
      deterministic: if True, disables dropout masking.
    """
    if deterministic is not None:
      self.deterministic = deterministic

  def __call__(
    self,
    inputs: jax.Array,
    *,
    deterministic: bool | None = None,
    rngs=None,
  ) -> jax.Array:
    """Applies dropout.

    Args:
      inputs: the array to drop out.
      deterministic: overrides the attribute of the same name.
      rngs: an ``nnx.Rngs``, ``RngStream`` or key to draw the mask with,
        overriding the layer's own stream.

    Returns:
      The masked and rescaled inputs.
    """
    deterministic = first_from(
      deterministic,
      self.deterministic,
      error_msg='No `deterministic` argument was provided to Dropout as '
      'either a __call__ argument or class attribute',
    )
    if self.rate == 0.0 or deterministic:
      return inputs
    if self.rate == 1.0:
      return jax.numpy.zeros_like(inputs)
    rngs = first_from(
      rngs,
      self.rngs,
      error_msg='`deterministic` is False, but no `rngs` argument was '
      'provided to Dropout as either a __call__ argument or class '
      'attribute.',
    )
    key = key_from(rngs, self.rng_collection)
    return _math.dropout(inputs, self.rate, key, self.broadcast_dims)
