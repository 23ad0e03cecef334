"""Defaults of new Variables: ``nnx.var_defaults`` (hijax / ref) and
``nnx.use_eager_sharding``.

>>> from flax import nnx
>>> nnx.var_defaults()
VarDefaults(hijax=False, ref=False)
>>> with nnx.var_defaults(ref=True):
...   nnx.var_defaults()['ref']
True
"""

import collections.abc
import dataclasses
import functools
import threading
import typing as tp

from flax import config as _flax_config
from flax.typing import BaseConfigContext

F = tp.TypeVar('F', bound=tp.Callable[..., tp.Any])
A = tp.TypeVar('A')


def _new_stack():
  return dataclasses.field(default_factory=list)


@dataclasses.dataclass
class VariableContext(threading.local):
  """Per-thread stacks of the Variable defaults set by context managers."""

  variable_hijax_stack: list[bool] = _new_stack()
  variable_ref_stack: list[bool] = _new_stack()
  eager_shard_stack: list[bool] = _new_stack()


VARIABLE_CONTEXT = VariableContext()


def _config_flag(name: str, default: bool) -> bool:
  try:
    return bool(getattr(_flax_config, name))
  except AttributeError:
    return default


def default_hijax() -> bool:
  stack = VARIABLE_CONTEXT.variable_hijax_stack
  return stack[-1] if stack else _config_flag('flax_hijax_variable', False)


def default_ref() -> bool:
  stack = VARIABLE_CONTEXT.variable_ref_stack
  return stack[-1] if stack else _config_flag('flax_array_ref', False)


@dataclasses.dataclass(frozen=True)
class VarDefaults(collections.abc.Mapping, tp.Generic[A]):
  """The current defaults of new Variables (a read-only mapping)."""

  hijax: bool
  ref: bool

  def __getitem__(self, key: str) -> tp.Any:
    if key == 'hijax':
      return self.hijax
    if key == 'ref':
      return self.ref
    raise KeyError(key)

  def __iter__(self) -> tp.Iterator[str]:
    return iter(('hijax', 'ref'))

  def __len__(self) -> int:
    return 2


_Setting = bool | None


class VarDefaultsContext:
  """Returned by ``var_defaults(...)`` with arguments: the new defaults are
  already in effect; used as a context manager (or decorator) they are
  restored on exit."""

  def __init__(
    self,
    *,
    hijax_prev: _Setting,
    hijax_new: _Setting,
    ref_prev: _Setting,
    ref_new: _Setting,
  ):
    # What each setting was before, and what it is now.
    self.hijax_prev, self.hijax_new = hijax_prev, hijax_new
    self.ref_prev, self.ref_new = ref_prev, ref_new

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc_value, traceback):
    ctx = VARIABLE_CONTEXT
    if self.hijax_new is not None:
      ctx.variable_hijax_stack.pop()
    if self.ref_new is not None:
      ctx.variable_ref_stack.pop()
    return False

  def __call__(self, f: F) -> F:
    hijax, ref = self.hijax_new, self.ref_new
    # the call form already pushed the new values: undo that, the
    # decorated function pushes them on each call
    self.__exit__(None, None, None)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
      with var_defaults(hijax=hijax, ref=ref):
        return f(*args, **kwargs)

    return tp.cast(F, wrapper)


def var_defaults(
  *, hijax: bool | None = None, ref: bool | None = None
) -> 'VarDefaultsContext | VarDefaults':
  """Reads or sets the defaults of new Variables.

  Without arguments it returns the current :class:`VarDefaults`. With
  ``hijax``/``ref`` it sets them for this thread and returns a context
  manager that restores the previous defaults on exit.

  Args:
    hijax: whether new Variables are hijax Variables.
    ref: whether new Variables keep their value in a mutable ``jax.Ref``.
  """
  if hijax is None and ref is None:
    return VarDefaults(hijax=default_hijax(), ref=default_ref())
  ctx = VARIABLE_CONTEXT
  prev_hijax, prev_ref = default_hijax(), default_ref()
  if hijax is not None:
    ctx.variable_hijax_stack.append(bool(hijax))
  if ref is not None:
    ctx.variable_ref_stack.append(bool(ref))
  return VarDefaultsContext(
    hijax_prev=prev_hijax,
    hijax_new=hijax,
    ref_prev=prev_ref,
    ref_new=ref,
  )


class use_eager_sharding(BaseConfigContext):  # noqa: N801 - Flax's name
  """Whether new Variables with ``out_sharding`` are sharded when they
  are created. Call it to set the value, or use it as a context manager.

  >>> from flax import nnx
  >>> with nnx.use_eager_sharding(False):
  ...   nnx.using_eager_sharding()
  False
  """

  @classmethod
  def get_default(cls):
    return _config_flag('flax_always_shard_variable', True)

  @classmethod
  def get_stack(cls):
    return VARIABLE_CONTEXT.eager_shard_stack


def using_eager_sharding() -> bool:
  """Whether eager sharding of new Variables is on."""
  return bool(use_eager_sharding.current_value())
