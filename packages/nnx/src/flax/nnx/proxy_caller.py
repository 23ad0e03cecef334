"""Proxies that record attribute and item accesses, then call a function
with them (what ``GraphDef.apply`` and ``nnx.call`` return).

>>> from flax.nnx import proxy_caller
>>> proxy = proxy_caller.CallableProxy(
...   lambda accessor, *args: accessor({'f': lambda x: x + 1})(*args)
... )
>>> proxy['f'](1)
2
"""

import dataclasses
import typing as tp

A = tp.TypeVar('A')


_record = dataclasses.dataclass(frozen=True)


@_record
class GetItem:
  """Records ``x[key]``."""

  key: tp.Any

  def _replay(self, x):
    return x[self.key]


@_record
class GetAttr:
  """Records ``x.name``."""

  name: str

  def _replay(self, x):
    return getattr(x, self.name)


@_record
class DelayedAccessor:
  """A chain of attribute/item accesses, replayed on an object by calling
  the accessor.

  >>> from flax.nnx.proxy_caller import DelayedAccessor
  >>> DelayedAccessor().real.imag(3 + 4j)
  0.0
  """

  actions: tuple[GetItem | GetAttr, ...] = ()

  def __call__(self, x):
    for action in self.actions:
      x = action._replay(x)
    return x

  def __getattr__(self, name):
    if name.startswith('__') and name.endswith('__'):
      raise AttributeError(name)
    return DelayedAccessor((*self.actions, GetAttr(name)))

  def __getitem__(self, key):
    return DelayedAccessor((*self.actions, GetItem(key)))


class _AccessorCall(tp.Protocol):
  def __call__(self, accessor: DelayedAccessor, /, *args, **kwargs): ...


class CallableProxy:
  """Collects accesses (``proxy.a[0].method``) and, when called, calls
  ``callable(accessor, *args, **kwargs)`` with a :class:`DelayedAccessor`
  that replays them."""

  def __init__(
    self, callable: _AccessorCall, accessor: DelayedAccessor | None = None
  ):
    if accessor is None:
      accessor = DelayedAccessor()
    self._callable, self._accessor = callable, accessor

  def __call__(self, *args, **kwargs):
    return self._callable(self._accessor, *args, **kwargs)

  def __getattr__(self, name) -> 'CallableProxy':
    if name.startswith('__') and name.endswith('__'):
      raise AttributeError(name)
    return CallableProxy(self._callable, getattr(self._accessor, name))

  def __getitem__(self, key) -> 'CallableProxy':
    return CallableProxy(self._callable, self._accessor[key])


class ApplyCaller(tp.Protocol, tp.Generic[A]):
  """What ``GraphDef.apply`` and ``nnx.call`` return: reach a method by
  attribute or item access, call it, get ``(output, updates)``."""

  def __getattr__(self, __name) -> 'ApplyCaller[A]': ...

  def __getitem__(self, __name) -> 'ApplyCaller[A]': ...

  def __call__(self, *args, **kwargs) -> tuple[tp.Any, A]: ...
