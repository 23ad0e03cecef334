"""Activation functions (``nn.relu``, ...) and the PReLU module.

The functions are JAX's own; see :mod:`flax.layers.activations`.
"""

from typing import Any

import jax.numpy as jnp

from flax.layers.activations import *  # noqa: F403
from flax.layers.activations import __all__ as _functions
from flax.linen import Module, compact

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
    """Applies an activation to the inputs.

    Args:
      inputs: the nd-array to apply the activation function to.

    Returns:
      The transformed input.
    """
    negative_slope = self.param(
      'negative_slope',
      lambda k: jnp.asarray(self.negative_slope_init, self.param_dtype),
    )
    return jnp.where(
      inputs >= 0, inputs, jnp.asarray(negative_slope, inputs.dtype) * inputs
    )


__all__ = ['PReLU', *_functions]
