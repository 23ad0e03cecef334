"""Flax's dtype rules for layers.

With ``dtype=None`` a layer computes in the JAX-promoted type of its inputs
and parameters (``jnp.result_type``), made inexact (float) by default; with
an explicit ``dtype`` everything is cast to it.

>>> import jax.numpy as jnp
>>> from flax.layers.dtypes import promote_dtype
>>> x, w = promote_dtype(jnp.ones(2, jnp.bfloat16), jnp.ones(2))
>>> x.dtype, w.dtype
(dtype('float32'), dtype('float32'))
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Dtype = Any

MaybeDtype = Dtype | None
"""Type of a layer's ``dtype`` field (None: compute in the promoted type)."""

F32 = jnp.float32
"""Every layer's default ``param_dtype``."""


def canonicalize_dtype(*args, dtype: Dtype | None = None, inexact=True):
  """Returns the dtype a layer computes in.

  Args:
    *args: arrays (or scalars, or ``None``, which is ignored) whose promoted
      type is used when ``dtype`` is None.
    dtype: an explicit dtype; wins over the arguments.
    inexact: when True the result must be a floating or complex type; an
      integer/bool promotion result is promoted with float32.

  Returns:
    The dtype.

  Raises:
    ValueError: if ``inexact`` and an explicit ``dtype`` is not inexact.
  """
  if dtype is None:
    dtype = _common_dtype(args)
    if dtype is None:
      dtype = jnp.result_type(*(a for a in args if a is not None))
    if inexact and not jnp.issubdtype(dtype, jnp.inexact):
      dtype = jnp.promote_types(jnp.float32, dtype)
  else:
    dtype = np.dtype(dtype)
  if inexact and not jnp.issubdtype(dtype, jnp.inexact):
    raise ValueError(f'Dtype must be inexact: {dtype}')
  return dtype


def _common_dtype(args):
  # Fast path: arrays that already share one dtype need no promotion.
  dtype = None
  for a in args:
    if a is None:
      continue
    d = getattr(a, 'dtype', None)
    if d is None or (dtype is not None and d != dtype):
      return None
    dtype = d
  return None if dtype is None else jax.dtypes.canonicalize_dtype(dtype)


def _cast(x, dtype):
  if x is None:
    return None
  if isinstance(x, jax.Array) and x.dtype == dtype:
    return x
  # anything else becomes a JAX array (a Variable gives its value)
  return jnp.asarray(x, dtype)


def promote_dtype(*args, dtype: Dtype | None = None, inexact=True) -> list:
  """Casts every argument to one common dtype (Linen calling form).

  ``None`` arguments pass through, so optional parameters such as a missing
  bias can be handed in directly.

  Args:
    *args: arrays or ``None``.
    dtype: explicit target dtype, or None to promote the arguments.
    inexact: see :func:`canonicalize_dtype`.

  Returns:
    A list with the arguments cast to the common dtype.
  """
  dtype = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
  return [_cast(x, dtype) for x in args]


def promote_dtypes(args, /, *, dtype: Dtype | None = None, inexact=True):
  """Like :func:`promote_dtype` but takes and returns a tuple or list.

  This is the form NNX layers accept as their ``promote_dtype`` argument.
  """
  out = promote_dtype(*args, dtype=dtype, inexact=inexact)
  return type(args)(out) if isinstance(args, (tuple, list)) else out
