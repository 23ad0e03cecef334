"""Activation functions of NNX (``flax.nnx.relu`` ...) and ``PReLU``.

The functions are JAX's own (``flax.nnx.relu is jax.nn.relu``).

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> nnx.relu(jnp.array([-1.0, 2.0]))
Array([0., 2.], dtype=float32)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from flax import nnx
from flax.layers.activations import *  # noqa: F403
from flax.layers.activations import __all__ as _functions

__all__ = [*_functions, 'PReLU']


class PReLU(nnx.Module):
  """Parametric ReLU: ``x`` if ``x >= 0`` else ``negative_slope * x``.

  The learnable slope is the scalar ``nnx.Param`` ``negative_slope``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.PReLU(negative_slope_init=0.1)
  >>> layer(jnp.array([-2.0, 3.0]))
  Array([-0.2,  3. ], dtype=float32)

  Args:
    negative_slope_init: the initial slope.
    param_dtype: the dtype of the slope.
    rngs: accepted for uniformity with the other layers; unused.
  """

  def __init__(
    self,
    negative_slope_init: float = 0.01,
    param_dtype=jnp.float32,
    *,
    rngs=None,
  ):
    self.negative_slope = nnx.Param(
      jnp.asarray(negative_slope_init, dtype=param_dtype)
    )
    self.param_dtype = param_dtype

  def __call__(self, inputs: jax.Array) -> jax.Array:
    """Applies the activation."""
    slope = self.negative_slope.value
    return jnp.where(
      inputs >= 0, inputs, jnp.asarray(slope, inputs.dtype) * inputs
    )
