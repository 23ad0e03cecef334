"""dtype handling of the NNX layers (``flax.nnx.nn.dtypes``).

NNX's ``promote_dtype`` takes the arrays as one tuple and returns a tuple of
the same length, unlike Linen's, which takes them as positional arguments.
"""

from __future__ import annotations

import jax

from flax.layers.dtypes import canonicalize_dtype

__all__ = ['canonicalize_dtype', 'promote_dtype']

_Array = jax.Array


def promote_dtype(args: tuple, /, *, dtype=None, inexact: bool = True):
  """Casts the arrays in ``args`` to one dtype; ``None`` entries pass through.

  With ``dtype=None`` the dtype is the JAX promotion of the arrays (made
  inexact with ``inexact=True``); otherwise every array is cast to ``dtype``.

  >>> import jax.numpy as jnp
  >>> from flax.nnx.nn.dtypes import promote_dtype
  >>> x, y = promote_dtype((jnp.ones(2, jnp.int32), jnp.ones(2, jnp.bfloat16)))
  >>> x.dtype, y.dtype
  (dtype(bfloat16), dtype(bfloat16))

  Args:
    args: a tuple of arrays (or None).
    dtype: the target dtype, or None to infer one.
    inexact: whether an inferred dtype must be inexact (float or complex).

  Returns:
    A tuple with the promoted arrays.
  """
  if dtype is None:
    # Fast path: arrays already sharing one inexact dtype are returned as is.
    first = None
    for a in args:
      if a is None:
        continue
      if type(a) is not _Array and not isinstance(a, _Array):
        break
      if first is None:
        first = a.dtype
      elif a.dtype != first:
        break
    else:
      if first is None or not inexact or _is_inexact(first):
        return tuple(args)
  target = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
  return tuple(
    None if a is None else jax.numpy.asarray(a, target) for a in args
  )


_INEXACT = {}


def _is_inexact(dt) -> bool:
  r = _INEXACT.get(dt)
  if r is None:
    r = _INEXACT[dt] = bool(jax.numpy.issubdtype(dt, jax.numpy.inexact))
  return r
