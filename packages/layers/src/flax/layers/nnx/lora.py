"""Low-rank adaptation for NNX: ``LoRA``, ``LoRALinear``, ``LoRAParam``."""

from __future__ import annotations

import typing as tp
from types import MappingProxyType

import jax
import jax.numpy as jnp

from flax import nnx
from flax.nnx import Module as Module
from flax.typing import PromoteDtypeFn as PromoteDtypeFn
from flax.layers.nnx import dtypes
from flax.layers.nnx import initializers
from flax.layers.nnx.linear import Linear

Array = jax.Array

default_a_initializer = initializers.he_uniform()
default_b_initializer = initializers.zeros_init()

_EMPTY = MappingProxyType({})


class LoRAParam(nnx.Param):
  """The Variable type of the ``lora_a`` / ``lora_b`` parameters."""


# LoRA's constructor arguments kept as attributes, in this order.
_LORA_ATTRS = (
  'in_features',
  'out_features',
  'dtype',
  'param_dtype',
  'lora_param_type',
  'base_module',
  'promote_dtype',
)


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
    args = locals()
    for name in _LORA_ATTRS:
      setattr(self, name, args[name])
    # Keys: ``lora_a`` first, then ``lora_b``, both from the params stream.
    for name, init, shape, metadata in (
      ('lora_a', a_initializer, (in_features, lora_rank), a_metadata),
      ('lora_b', b_initializer, (lora_rank, out_features), b_metadata),
    ):
      value = init(rngs.params(), shape, param_dtype)
      setattr(self, name, lora_param_type(value, **metadata))

  def __call__(self, x: Array, **kwargs: tp.Any) -> Array:
    """Returns ``x @ lora_a @ lora_b``, plus ``base_module(x, **kwargs)``.

    Args:
      x: the input, ``(..., in_features)``.
      **kwargs: passed to ``base_module`` (unused without one).

    Returns:
      ``(..., out_features)``.
    """
    x, lora_a, lora_b = self.promote_dtype(
      (x, self.lora_a[...], self.lora_b[...]), dtype=self.dtype
    )
    update = x @ lora_a @ lora_b
    if self.base_module is None:
      return update
    if not callable(self.base_module):
      raise ValueError('`self.base_module` must be callable.')
    return update + self.base_module(x, **kwargs)


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
    lora_promote_dtype: dtype promotion function of the LoRA update.
    rngs: rng key container.
    a_metadata: extra metadata of ``lora.lora_a``.
    b_metadata: extra metadata of ``lora.lora_b``.
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
    lora_promote_dtype: PromoteDtypeFn = dtypes.promote_dtype,
    rngs: nnx.Rngs,
    a_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    b_metadata: tp.Mapping[str, tp.Any] = _EMPTY,
    **kwargs,
  ):
    args = locals()
    super().__init__(in_features, out_features, rngs=rngs, **kwargs)
    # The adapter takes the ``lora_*`` settings under LoRA's own names.
    own = {
      k: args[k]
      for k in ('a_initializer', 'b_initializer', 'a_metadata', 'b_metadata')
    }
    own.update(
      dtype=lora_dtype,
      param_dtype=lora_param_dtype,
      promote_dtype=lora_promote_dtype,
    )
    self.lora = LoRA(
      in_features,
      lora_rank,
      out_features,
      lora_param_type=lora_param_type,
      rngs=rngs,
      **own,
    )

  def __call__(self, x: Array, out_sharding=None) -> Array:
    """Returns ``Linear(x) + lora(x)``.

    Args:
      x: the input, ``(..., in_features)``.
      out_sharding: sharding of the dense part's result (explicit sharding
        mode).

    Returns:
      ``(..., out_features)``.
    """
    return super().__call__(x, out_sharding=out_sharding) + self.lora(x)
