"""Activation functions (``nn.relu``, ...) and the PReLU module.

The functions are JAX's own; see :mod:`flax.layers.activations`.
"""

from typing import Any

import jax.numpy as jnp

from flax.layers.activations import *  # noqa: F403
from flax.layers.activations import __all__ as _functions
from flax.layers.dtypes import F32
from flax.linen import Module, compact

# ``flax.linen.activation`` also names Dense.
from flax.layers.linen.linear import Dense as Dense  # noqa: E402, I001

Array = Any
Dtype = Any


class PReLU(Module):
  """``x`` where ``x >= 0``, a learned ``negative_slope * x`` elsewhere.

  Unlike the plain activation functions it has a parameter, so it is
  initialized like any layer.

  Example::

    >>> import jax, jax.numpy as jnp
    >>> import flax.linen as nn
    >>> act = nn.PReLU(negative_slope_init=0.5)
    >>> v = act.init(jax.random.key(1), jnp.zeros(2))
    >>> act.apply(v, jnp.array([-4.0, 1.0]))
    Array([-2.,  1.], dtype=float32)
  """

  param_dtype: Dtype = F32
  """Dtype of ``negative_slope``."""
  negative_slope_init: float = 0.01
  """Starting value of ``negative_slope``."""

  @compact
  def __call__(self, inputs: Array) -> Array:
    """Applies the activation; the result has the dtype of ``inputs``."""
    value = self.negative_slope_init
    slope = self.param(
      'negative_slope', lambda _: jnp.full((), value, self.param_dtype)
    )
    slope = slope.astype(inputs.dtype)
    return jnp.where(inputs < 0, slope * inputs, inputs)


__all__ = ['PReLU', *_functions]
