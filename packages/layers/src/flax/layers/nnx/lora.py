"""Low-rank adaptation for NNX: ``LoRA``, ``LoRALinear``, ``LoRAParam``."""

from __future__ import annotations

import typing as tp
from types import MappingProxyType

import jax
import jax.numpy as jnp

from flax import nnx
from flax.layers.nnx import dtypes
from flax.layers.nnx import initializers
from flax.layers.nnx.linear import Linear

Array = jax.Array

default_a_initializer = initializers.he_uniform()
default_b_initializer = initializers.zeros_init()

_EMPTY = MappingProxyType({})


class LoRAParam(nnx.Param):
  """The Variable type of the ``lora_a`` / ``lora_b`` parameters."""


class LoRA(nnx.Module):
  """A low-rank update ``x @ lora_a @ lora_b``, plus an optional base module.

  Params: ``lora_a (in_features, lora_rank)`` (He-uniform) and ``lora_b
  (lora_rank, out_features)`` (zeros), of type ``lora_param_type``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.LoRA(3, 2, 4, rngs=nnx.Rngs(0))
  >>> layer.lora_a.shape, layer.lora_b.shape
  ((3, 2), (2, 4))
  >>> layer(jnp.ones((1, 3))).shape
  (1, 4)

  Args:
    in_features: number of input features.
    lora_rank: the rank of the update.
    out_features: number of output features.
    base_module: a callable whose output is added (e.g. a frozen Linear).
    dtype: dtype of the computation.
    param_dtype: dtype passed to the initializers.
    a_initializer: initializer of ``lora_a``.
    b_initializer: initializer of ``lora_b``.
    lora_param_type: the Variable type of both params.
    promote_dtype: dtype promotion function.
    rngs: rng key container.
    a_metadata: extra metadata of ``lora_a``.
    b_metadata: extra metadata of ``lora_b``.
  """

  def __init__(
    self,
    in_features: int,
    lora_rank: int,
    out_features: int,
    *,
    base_module: tp.Callable[..., Array] | None = None,
    dtype=None,
    param_dtype=jnp.float32,
    a_initializer=default_a_initializer,
    b_initializer=default_b_initializer,
    lora_param_type: type[nnx.Variable] = LoRAParam,
    promote_dtype=dtypes.promote_dtype,
    rngs: nnx.Rngs,
    a_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    b_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
  ):
    self.in_features = in_features
    self.out_features = out_features
    self.lora_rank = lora_rank
    self.dtype = dtype
    self.param_dtype = param_dtype
    self.lora_param_type = lora_param_type
    self.promote_dtype = promote_dtype
    self.base_module = base_module
    self.lora_a = lora_param_type(
      a_initializer(rngs.params(), (in_features, lora_rank), param_dtype),
      **a_metadata,
    )
    self.lora_b = lora_param_type(
      b_initializer(rngs.params(), (lora_rank, out_features), param_dtype),
      **b_metadata,
    )

  def __call__(self, x: Array) -> Array:
    """Returns ``x @ lora_a @ lora_b`` (+ ``base_module(x)``)."""
    x, lora_a, lora_b = self.promote_dtype(
      (x, self.lora_a.value, self.lora_b.value), dtype=self.dtype
    )
    out = x @ lora_a @ lora_b
    if self.base_module is not None:
      if not callable(self.base_module):
        raise ValueError('`self.base_module` must be callable.')
      out = out + self.base_module(x)
    return out


class LoRALinear(Linear):
  """A :class:`Linear` layer with a LoRA update in the ``lora`` submodule.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> layer = nnx.LoRALinear(3, 4, lora_rank=2, rngs=nnx.Rngs(0))
  >>> layer.kernel.shape, layer.lora.lora_a.shape
  ((3, 4), (3, 2))

  Args:
    in_features: number of input features.
    out_features: number of output features.
    lora_rank: the rank of the update.
    lora_dtype: dtype of the LoRA computation.
    lora_param_dtype: dtype of the LoRA params.
    a_initializer: initializer of ``lora_a``.
    b_initializer: initializer of ``lora_b``.
    lora_param_type: Variable type of the LoRA params.
    rngs: rng key container.
    **kwargs: passed on to :class:`Linear`.
  """

  def __init__(
    self,
    in_features: int,
    out_features: int,
    *,
    lora_rank: int,
    lora_dtype=None,
    lora_param_dtype=jnp.float32,
    a_initializer=default_a_initializer,
    b_initializer=default_b_initializer,
    lora_param_type: type[nnx.Variable] = LoRAParam,
    rngs: nnx.Rngs,
    **kwargs,
  ):
    super().__init__(in_features, out_features, rngs=rngs, **kwargs)
    self.lora = LoRA(
      in_features,
      lora_rank,
      out_features,
      dtype=lora_dtype,
      param_dtype=lora_param_dtype,
      a_initializer=a_initializer,
      b_initializer=b_initializer,
      lora_param_type=lora_param_type,
      rngs=rngs,
    )

  def __call__(self, x: Array) -> Array:
    """Returns ``Linear(x) + lora(x)``."""
    return super().__call__(x) + self.lora(x)
