"""Activation functions of NNX (``flax.nnx.relu`` ...) and ``PReLU``.

The functions are JAX's own (``flax.nnx.relu is jax.nn.relu``).

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> nnx.relu(jnp.array([-1.0, 2.0]))
Array([0., 2.], dtype=float32)
"""

from __future__ import annotations

import typing as tp
from types import MappingProxyType

import jax
import jax.numpy as jnp

from flax import nnx
from flax.layers.activations import *  # noqa: F403
from flax.layers.activations import __all__ as _functions
from flax.layers.nnx import dtypes as dtypes
from flax.typing import PromoteDtypeFn as PromoteDtypeFn

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
    dtype: the dtype of the computation (default: promoted from the input
      and the slope).
    param_dtype: the dtype of the slope.
    promote_dtype: dtype promotion function; it gets ``(inputs,)``, the
      ``dtype`` and ``inexact=False``.
    negative_slope_metadata: extra metadata of the ``negative_slope`` Param.
  """

  def __init__(
    self,
    negative_slope_init: float = 0.01,
    *,
    dtype=None,
    param_dtype=jnp.float32,
    promote_dtype=dtypes.promote_dtype,
    negative_slope_metadata: tp.Mapping[str, tp.Any] = MappingProxyType({}),
  ):
    self.negative_slope = nnx.Param(
      jnp.asarray(negative_slope_init, dtype=param_dtype),
      **negative_slope_metadata,
    )
    self.dtype = dtype
    self.param_dtype = param_dtype
    self.promote_dtype = promote_dtype

  def __call__(self, inputs: jax.Array) -> jax.Array:
    """Applies the activation."""
    # The input keeps its dtype (unless ``dtype`` is given); the slope is
    # cast to it.
    (inputs,) = self.promote_dtype((inputs,), dtype=self.dtype, inexact=False)
    slope = jnp.asarray(self.negative_slope[...], inputs.dtype)
    return jnp.where(inputs >= 0, inputs, slope * inputs)
