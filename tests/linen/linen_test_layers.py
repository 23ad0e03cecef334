"""Small layers of the Linen tests' own: tests/linen runs with flax-linen
alone (no flax-layers), so ``nn.Dense`` is not there."""

import jax
import jax.numpy as jnp
from flax import linen as nn


class Dense(nn.Module):
  """``x @ kernel + bias``, with ``nn.Dense``'s parameter names, shapes and
  initializers."""

  features: int

  @nn.compact
  def __call__(self, x):
    kernel = self.param(
      'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    bias = self.param('bias', jax.nn.initializers.zeros, (self.features,))
    y = x @ kernel
    return y + jnp.broadcast_to(bias, y.shape)
