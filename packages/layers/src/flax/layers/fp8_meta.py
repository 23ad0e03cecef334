"""An extended JAX dtype for FP8 metadata whose gradients combine by max.

A scale or an amax history used by several FP8 dots in one step gets one
"gradient" per use (the updated value each use proposes). Stored in an
ordinary float dtype, JAX would add those proposals together; stored in an
``fp8_meta`` dtype (``fm32`` for float32), JAX combines them with ``max``,
which is what delayed scaling needs. The physical layout is the float dtype
itself, so conversions in both directions are free.

>>> import jax.numpy as jnp
>>> from jax import lax
>>> from flax.layers.fp8_meta import fm32
>>> meta = lax.convert_element_type(jnp.array([1.0, 2.0]), fm32)
>>> meta.dtype
fp8_meta32
>>> lax.convert_element_type(meta, jnp.float32)
Array([1., 2.], dtype=float32)
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src import core as jax_core
from jax._src import dtypes as jax_dtypes
from jax._src.interpreters import pxla

try:
  from jax._src import earray
except ImportError:  # pragma: no cover - every supported jax has it
  earray = None

# Whether this JAX can hold extended-dtype values outside of a trace.
CAN_USE_EARRAY = earray is not None


class fp8_meta_dtype(jax.dtypes.extended):  # noqa: N801 - Flax's name
  """The scalar type of every ``fp8_meta_dtype_wrapper`` dtype."""


def _meta_of(*candidates):
  """The first fp8 meta dtype among ``candidates`` (dtypes or arrays)."""
  for c in candidates:
    dt = getattr(c, 'dtype', c)
    if isinstance(dt, fp8_meta_dtype_wrapper):
      return dt
  return None


def _stored_as(dtype, meta) -> bool:
  """Whether ``dtype`` is the float dtype the meta dtype ``meta`` is
  stored as."""
  return dtype == meta.float_dtype


class Fp8MetaTyRules:
  """How JAX builds, converts and accumulates ``fp8_meta`` values."""

  @staticmethod
  def physical_element_aval(dtype) -> jax_core.ShapedArray:
    return jax_core.ShapedArray((), dtype.float_dtype)

  @staticmethod
  def add(dt, x, y):
    # Some JAX call sites pass something other than the dtype as ``dt``;
    # the operands always know theirs.
    meta = _meta_of(dt, x, y)
    physical = meta.float_dtype
    both = lax.max(
      lax.convert_element_type(x, physical),
      lax.convert_element_type(y, physical),
    )
    return lax.convert_element_type(both, meta)

  @staticmethod
  def zero(dt):
    # The identity of ``max``: accumulating onto it keeps the other value.
    lowest = jnp.array(-jnp.inf, dt.float_dtype)
    return lax.convert_element_type(lowest, dt)

  # A meta value's tangent is a meta value of the same dtype.
  tangent_dtype = staticmethod(lambda dtype: dtype)

  @staticmethod
  def full(shape, fill_value, dtype):
    physical = lax.full(shape, fill_value, dtype.float_dtype)
    return lax.convert_element_type(physical, dtype)

  @staticmethod
  def global_sharded_result_handler(aval, out_sharding, committed):
    from jax._src import sharding_impls

    physical_handler = pxla.global_result_handlers[jax_core.ShapedArray](
      jax_core.physical_aval(aval),
      sharding_impls.physical_sharding(aval, out_sharding),
      committed,
    )
    return physical_handler.wrap(lambda data: earray.EArray(aval, data))

  # Conversions are free in both directions between a meta dtype and its
  # own float dtype, and refused otherwise (JAX names the arguments).
  @staticmethod
  def convert_from(fp8_meta_dtype, other_dtype) -> bool:
    return _stored_as(other_dtype, fp8_meta_dtype)

  @staticmethod
  def convert_to(other_dtype, fp8_meta_dtype) -> bool:
    return _stored_as(other_dtype, fp8_meta_dtype)


@dataclasses.dataclass(frozen=True)
class fp8_meta_dtype_wrapper(jax_dtypes.ExtendedDType):  # noqa: N801
  """An ``fp8_meta`` dtype stored as ``float_dtype``.

  Attributes:
    float_dtype: the physical float dtype (``jnp.float32`` for ``fm32``).
  """

  float_dtype: np.dtype
  _rules: type = Fp8MetaTyRules
  type: fp8_meta_dtype = fp8_meta_dtype

  @property
  def name(self) -> str:
    return f'fp8_meta{np.dtype(self.float_dtype).itemsize * 8}'

  def __repr__(self) -> str:
    return self.name


# The float32 fp8 meta dtype, under both of its names.
fp32_max_grad = fp8_meta_dtype_wrapper(jnp.float32)
fm32 = fp8_meta_dtype_wrapper(jnp.float32)
