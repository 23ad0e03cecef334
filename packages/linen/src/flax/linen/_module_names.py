"""Helpers that Flax exposes at ``flax.linen.module``.

``flax.linen.module`` re-exports everything listed in ``__all__`` here,
next to the Module class itself (and, lazily, the functional API of
``flax.linen._functional``: ``apply``, ``init``, ``merge_param``, ...).
"""

import dataclasses
import threading
from typing import Any, Protocol

from flax.core.scope import Scope as Scope
from flax.core.scope import Variable as Variable
from flax.core.scope import union_filters as union_filters
from flax.ids import FlaxId as FlaxId
from flax.ids import uuid as uuid
from flax.linen._context import disable_named_call as disable_named_call
from flax.linen._context import enable_named_call as enable_named_call
from flax.linen._context import override_named_call as override_named_call
from flax.linen._method_wrapping import _DataDescriptorWrapper
from flax.linen._method_wrapping import _DescriptorWrapper
from flax.linen._method_wrapping import _wrap_descriptor_once

__all__ = [
  'Descriptor',
  'DescriptorWrapper',
  'FlaxId',
  'Scope',
  'ThreadLocalStack',
  'Variable',
  'create_descriptor_wrapper',
  'disable_named_call',
  'enable_named_call',
  'module_field',
  'override_named_call',
  'tuple_init',
  'tuple_reduce',
  'union_filters',
  'uuid',
  'wrap_descriptor_once',
]


class Descriptor(Protocol):
  """Anything with ``__get__`` (properties and other descriptors)."""

  def __get__(self, obj, objtype=None) -> Any: ...


DescriptorWrapper = _DescriptorWrapper


def create_descriptor_wrapper(descriptor: Descriptor) -> DescriptorWrapper:
  """Wraps ``descriptor`` so that AttributeErrors inside it read clearly.

  A descriptor with ``__set__`` gets a wrapper that also forwards
  ``__set__`` and ``__delete__``.
  """
  if hasattr(descriptor, '__set__'):
    return _DataDescriptorWrapper(descriptor)
  return _DescriptorWrapper(descriptor)


def wrap_descriptor_once(descriptor) -> DescriptorWrapper:
  """Like :func:`create_descriptor_wrapper`, but never wraps twice."""
  return _wrap_descriptor_once(descriptor)


def tuple_reduce(xs, x):
  """``xs + (x,)``: the default ``reduce_fn`` of ``Module.sow``."""
  return xs + (x,)


def tuple_init():
  """``()``: the default ``init_fn`` of ``Module.sow``."""
  return ()


def module_field(*, kw_only: bool = False, default: Any | None = ...) -> Any:
  """A dataclass field for a Module attribute; ``...`` means no default.

  >>> import dataclasses
  >>> from flax.linen.module import module_field
  >>> module_field(kw_only=True, default=None).kw_only
  True
  """
  if default is ...:
    return dataclasses.field(kw_only=kw_only)
  return dataclasses.field(kw_only=kw_only, default=default)


class ThreadLocalStack(threading.local):
  """A stack that each thread sees separately.

  >>> from flax.linen.module import ThreadLocalStack
  >>> stack = ThreadLocalStack()
  >>> stack.push(1); stack.push(2)
  >>> stack.pop(), list(stack)
  (2, [1])
  """

  def __init__(self):
    super().__init__()
    self._items = []

  def push(self, elem) -> None:
    """Puts ``elem`` on top."""
    self._items.append(elem)

  def pop(self):
    """Removes and returns the top item."""
    return self._items.pop()

  def __getitem__(self, index):
    return self._items[index]

  def __len__(self) -> int:
    return len(self._items)

  def __iter__(self):
    return iter(self._items)
