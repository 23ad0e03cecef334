"""Activation functions (``nn.relu``, ...) and the PReLU module.

The functions are JAX's own; see :mod:`flax.layers.activations`.
"""

from typing import Any

import jax.numpy as jnp

from flax.layers.activations import *  # noqa: F403
from flax.layers.activations import __all__ as _functions
from flax.linen import Module, compact

# ``flax.linen.activation`` also names Dense.
from flax.layers.linen.linear import Dense as Dense  # noqa: E402, I001

Array = Any
Dtype = Any


class PReLU(Module):
  """Parametric Rectified Linear Unit (PReLU) activation function.

  Note that PReLU is a Flax layer and not a simple activation function, so
  it needs to be initialized before being called.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> layer = nn.PReLU()
    >>> variables = layer.init(jax.random.key(0), jnp.ones(3))
    >>> variables['params']['negative_slope']
    Array(0.01, dtype=float32)
    >>> layer.apply(variables, jnp.array([-2.0, 3.0]))
    Array([-0.02,  3.  ], dtype=float32)

  Attributes:
    param_dtype: the dtype passed to parameter initializers (default:
      float32).
    negative_slope_init: the value to initialize the negative slope
      (default 0.01).
  """

  param_dtype: Dtype = jnp.float32
  negative_slope_init: float = 0.01

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Applies the activation: ``x`` where ``x >= 0``, ``slope * x`` else.

    Args:
      inputs: the nd-array to apply the activation function to.

    Returns:
      The transformed input, with the dtype of ``inputs``.
    """

    def init_slope(_rng):
      return jnp.full((), self.negative_slope_init, self.param_dtype)

    slope = self.param('negative_slope', init_slope).astype(inputs.dtype)
    return jnp.where(inputs < 0, slope * inputs, inputs)


__all__ = ['PReLU', *_functions]
