"""Helpers shared by the NNX layers (not public)."""

from __future__ import annotations

import typing as tp

from flax import nnx


def first_from(*args, error_msg: str):
  """Returns the first argument that is not None.

  Raises:
    ValueError: with ``error_msg`` when every argument is None.
  """
  for arg in args:
    if arg is not None:
      return arg
  raise ValueError(error_msg)


def optional_data(value):
  """Marks an optional sub-value (None when absent) as pytree data."""
  data = getattr(nnx, 'data', None)
  if data is None:
    return value
  return data(value)


def key_from(rngs, collection: str):
  """Draws one key for ``collection`` from Rngs, an RngStream or a key."""
  if isinstance(rngs, nnx.Rngs):
    return getattr(rngs, collection)()
  if callable(rngs) and not hasattr(rngs, 'dtype'):
    return rngs()
  return rngs


def fork_stream(rngs, collection: str):
  """A stream of its own for ``collection``, drawn from ``rngs``.

  Layers that draw keys while running (Dropout, attention dropout) keep such a
  stream, as Flax's layers do.
  """
  if rngs is None:
    return None
  if isinstance(rngs, nnx.Rngs):
    stream = rngs[collection]
  else:
    stream = rngs
  fork = getattr(stream, 'fork', None)
  if fork is None:
    return stream
  return fork()


def variable_metadata(metadata: tp.Mapping[str, tp.Any] | None):
  return dict(metadata) if metadata else {}
