"""Filters: select Variables (or graph nodes) by type, path or tag.

A filter is a Variable type, a string tag, ``...`` (everything), ``None``
or ``False`` (nothing), ``True``, a list/tuple (any of), or a callable
``(path, value) -> bool``.

>>> from flax import nnx
>>> pred = nnx.filterlib.to_predicate(nnx.Any(nnx.Param, 'dropout'))
>>> pred(('w',), nnx.Param(0.0))
True
"""

import dataclasses
import typing as tp

from flax.typing import Key as Key

Filter = tp.Any


class HasTag(tp.Protocol):
  """Objects with a ``tag`` attribute (what :class:`WithTag` matches)."""

  tag: str


def to_predicate(filter: Filter) -> tp.Callable[[tuple, tp.Any], bool]:
  """Turns any filter into a ``(path, value) -> bool`` predicate."""
  if isinstance(filter, str):
    return WithTag(filter)
  if isinstance(filter, type):
    return OfType(filter)
  if isinstance(filter, bool):
    return Everything() if filter else Nothing()
  if filter is Ellipsis:
    return Everything()
  if filter is None:
    return Nothing()
  if callable(filter):
    return filter
  if isinstance(filter, (list, tuple)):
    return Any(*filter)
  raise TypeError(
    f'Invalid filter: {filter!r}. A filter is a type, a string tag, '
    '`...`, None, a bool, a list/tuple of filters or a callable '
    '(path, value) -> bool.'
  )


def filters_to_predicates(filters) -> tuple:
  """Predicates for ``filters``; ``...`` may only appear last."""
  for i, f in enumerate(filters):
    if (f is Ellipsis or f is True) and i != len(filters) - 1:
      raise ValueError(
        '`...` or `True` can only be used as the last filters, got '
        f'{f!r} it at index {i} (it takes everything left) in {filters!r}.'
      )
  return tuple(to_predicate(f) for f in filters)


@dataclasses.dataclass(frozen=True)
class WithTag:
  """Matches values whose ``tag`` attribute equals ``tag`` (Rng streams)."""

  tag: str

  def __call__(self, path, x):
    return getattr(x, 'tag', None) == self.tag

  def __repr__(self):
    return f'WithTag({self.tag!r})'


@dataclasses.dataclass(frozen=True)
class PathContains:
  """Matches values whose path contains ``key``.

  With ``exact=False`` a path entry only needs to contain ``key`` as a
  substring.
  """

  key: tp.Hashable
  exact: bool = True

  def __call__(self, path, x):
    if self.exact:
      return self.key in path
    return any(str(self.key) in str(p) for p in path)

  def __repr__(self):
    return f'PathContains({self.key!r}, exact={self.exact})'


@dataclasses.dataclass(frozen=True)
class PathIn:
  """Matches values whose path is one of ``paths``."""

  paths: tuple

  def __init__(self, *paths):
    object.__setattr__(self, 'paths', frozenset(tuple(p) for p in paths))

  def __call__(self, path, x):
    return tuple(path) in self.paths

  def __repr__(self):
    return f'PathIn({",".join(map(repr, self.paths))})'


@dataclasses.dataclass(frozen=True)
class OfType:
  """Matches instances of ``type`` (or values whose ``.type`` is one)."""

  type: type

  def __call__(self, path, x):
    return isinstance(x, self.type) or (
      isinstance(getattr(x, 'type', None), type)
      and issubclass(x.type, self.type)
    )

  def __repr__(self):
    return f'OfType({self.type!r})'


class _Composite:
  """Equality, hashing and repr of the filters built from other filters.

  A subclass says how it combines its ``parts`` (predicates) in
  ``__call__``; two filters are equal when they are of one class and have
  equal parts, and print as ``Class(part, ...)``.
  """

  parts: tuple = ()

  def __eq__(self, other):
    return isinstance(other, type(self)) and self.parts == other.parts

  def __hash__(self):
    return hash((type(self).__name__, self.parts))

  def __repr__(self):
    return f'{type(self).__name__}({", ".join(map(repr, self.parts))})'


class Any(_Composite):
  """Matches when any of the filters matches."""

  def __init__(self, *filters):
    self.parts = self.predicates = tuple(map(to_predicate, filters))

  def __call__(self, path, x):
    return any(p(path, x) for p in self.parts)


class All(_Composite):
  """Matches when all of the filters match."""

  def __init__(self, *filters):
    self.parts = self.predicates = tuple(map(to_predicate, filters))

  def __call__(self, path, x):
    return all(p(path, x) for p in self.parts)


class Not(_Composite):
  """Matches when the filter does not match."""

  def __init__(self, collection_filter: Filter, /):
    self.predicate = to_predicate(collection_filter)
    self.parts = (self.predicate,)

  def __call__(self, path, x):
    return not self.predicate(path, x)


class Everything(_Composite):
  """Matches everything (the ``...`` filter)."""

  def __call__(self, path, x):
    return True


class Nothing(_Composite):
  """Matches nothing (the ``None`` filter)."""

  def __call__(self, path, x):
    return False
