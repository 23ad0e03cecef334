"""Helpers shared by the NNX layers (not public)."""

from __future__ import annotations

import typing as tp

import jax

from flax import nnx

# Initializers that never read their key (see :func:`param_key`).
_KEYLESS = (jax.nn.initializers.zeros, jax.nn.initializers.ones)


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


def param_key(rngs, init):
  """The key ``init`` gets: ``rngs.params()``, as Flax draws it.

  For ``zeros`` and ``ones``, which never read their key, the ``params``
  stream of an :class:`nnx.Rngs` is advanced as a draw advances it without
  deriving a key: the parameter and every later key are the same.
  """
  stream = rngs.params
  if (init is _KEYLESS[0] or init is _KEYLESS[1]) and isinstance(
    rngs, nnx.Rngs
  ):
    # (a flax-nnx without ``RngStream._advance`` draws the key)
    advance = getattr(stream, '_advance', None)
    if advance is not None:
      return advance()
  return stream()


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


_NOT_KEPT = frozenset({'self', '__class__', 'rngs', 'keep_rngs'})
# Initializers and Variable metadata are used while building the module and
# are not kept on it (as in Flax 0.12.8, whose layers do not store them).
_NOT_KEPT_SUFFIXES = ('_init', '_initializer', '_metadata')


def keep_args(module, args, skip=(), **overrides):
  """Stores a constructor's arguments as attributes, in signature order.

  Args:
    module: the module being built.
    args: the constructor's ``locals()``, taken before it binds other
      names.
    skip: names of arguments not to keep.
    **overrides: values stored instead of some arguments (e.g. canonical
      forms), at the arguments' places.

  ``self``, ``rngs``, ``keep_rngs``, the initializers (``*_init``,
  ``*_initializer``) and the ``*_metadata`` mappings are not stored, nor the
  attributes the constructor has already set.
  """
  attrs = vars(module)
  for name, value in args.items():
    if (
      name in _NOT_KEPT
      or name.endswith(_NOT_KEPT_SUFFIXES)
      or name in attrs
      or name in skip
    ):
      continue
    setattr(module, name, overrides.get(name, value))


def init_kernel_bias(module, args, kernel_shape, bias_shape, **overrides):
  """Creates ``kernel`` and ``bias`` Params, then keeps the other arguments.

  Keys are drawn from ``rngs.params()`` for the kernel, then the bias, as
  Flax does (see :func:`param_key`).

  Args:
    module: the module being built.
    args: the constructor's ``locals()`` (see :func:`keep_args`); its
      ``rngs``, ``param_dtype``, ``kernel_init``, ``bias_init``,
      ``kernel_metadata`` and ``bias_metadata`` are used.
    kernel_shape: the shape of ``kernel``.
    bias_shape: the shape of ``bias``; None for no bias (``bias`` is None).
    **overrides: see :func:`keep_args`.
  """
  rngs, dtype = args['rngs'], args['param_dtype']
  kernel_init = args['kernel_init']
  module.kernel = nnx.Param(
    kernel_init(param_key(rngs, kernel_init), kernel_shape, dtype),
    **args['kernel_metadata'],
  )
  if bias_shape is None:
    module.bias = optional_data(None)
  else:
    bias_init = args['bias_init']
    module.bias = nnx.Param(
      bias_init(param_key(rngs, bias_init), bias_shape, dtype),
      **args['bias_metadata'],
    )
  keep_args(module, args, **overrides)
