"""The registry pairing Linen collection names with NNX Variable types
(re-exported by :mod:`flax.nnx.variablelib`).

>>> from flax import nnx
>>> from flax.nnx import variablelib
>>> variablelib.variable_name_from_type(nnx.Param)
'params'
>>> variablelib.variable_type_from_name('batch_stats') is nnx.BatchStat
True
"""

from flax.typing import MISSING

_NAME_TO_TYPE: dict = {}
_TYPE_TO_NAME: dict = {}


def register_variable_name(name: str, typ=MISSING, *, overwrite=False):
  """Registers a pair of Linen collection name and NNX Variable type.

  Can be used as a class decorator: ``@nnx.register_variable_name('foo')``.
  """
  if typ is MISSING:
    return lambda t: register_variable_name(name, t, overwrite=overwrite)
  if not overwrite and name in _NAME_TO_TYPE and _NAME_TO_TYPE[name] is not typ:
    raise ValueError(
      f'Name {name!r} is already registered to '
      f'{_NAME_TO_TYPE[name].__name__}; pass overwrite=True to replace it.'
    )
  _NAME_TO_TYPE[name] = typ
  _TYPE_TO_NAME[typ] = name
  return typ


def variable_name_from_type(typ, /, *, allow_register=False) -> str:
  """Given an NNX Variable type, returns its Linen-style collection name."""
  if typ in _TYPE_TO_NAME:
    return _TYPE_TO_NAME[typ]
  if not allow_register:
    raise ValueError(
      f'Type {typ} is not registered in the registry. To register a name, '
      'use `register_variable_name()` or pass allow_register=True.'
    )
  name = typ.__name__
  register_variable_name(name, typ)
  return name


def variable_type_from_name(name: str, /, *, base=None, allow_register=False):
  """Given a Linen-style collection name, gets or creates its Variable type
  (a subclass of ``base``, by default :class:`~flax.nnx.Variable`)."""
  if name in _NAME_TO_TYPE:
    return _NAME_TO_TYPE[name]
  if not allow_register:
    raise ValueError(
      f'Name {name!r} is not registered in the registry. To register a new '
      'name, use `register_variable_name()` or pass allow_register=True.'
    )
  if base is None:
    from flax.nnx.variablelib import Variable as base
  typ = type(name, (base,), {})
  register_variable_name(name, typ)
  return typ
