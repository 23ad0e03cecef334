"""Collection filters: which variable collections (or PRNG streams) a rule
applies to.

A filter is one of

* a bool: ``True`` matches everything, ``False`` nothing;
* a string: matches the collection of that name;
* a collection of strings: matches any of the names;
* :class:`DenyList`: matches everything its ``deny`` filter does not.

>>> from flax.core.scope import DenyList, in_filter
>>> in_filter(['params', 'batch_stats'], 'params')
True
>>> in_filter(DenyList('intermediates'), 'intermediates')
False
"""

import dataclasses
import operator
from collections.abc import Collection, Container, Mapping
from typing import Any, Union

from flax import errors


@dataclasses.dataclass(frozen=True, eq=True)
class DenyList:
  """A filter that matches everything except what ``deny`` matches.

  Attributes:
    deny: the filter of the collections to exclude.

  >>> from flax.core import DenyList
  >>> DenyList('intermediates')
  DenyList(deny='intermediates')
  """

  deny: Any


Filter = Union[bool, str, Collection[str], DenyList]
CollectionFilter = Filter
PRNGSequenceFilter = Filter


def in_filter(filter_like: Filter, col: str) -> bool:
  """Returns whether the collection ``col`` matches ``filter_like``.

  Raises:
    InvalidFilterError: if ``filter_like`` is not a filter.
  """
  if isinstance(filter_like, str):
    return col == filter_like
  if isinstance(filter_like, bool):
    return filter_like
  if isinstance(filter_like, DenyList):
    return not in_filter(filter_like.deny, col)
  if isinstance(filter_like, Container):
    return col in filter_like
  raise errors.InvalidFilterError(filter_like)


def is_filter_empty(filter_like: Filter) -> bool:
  """Returns whether ``filter_like`` matches no collection at all.

  >>> from flax.core.scope import DenyList, is_filter_empty
  >>> is_filter_empty(False), is_filter_empty([]), is_filter_empty('params')
  (True, True, False)
  >>> is_filter_empty(DenyList(True))
  True

  Raises:
    InvalidFilterError: if ``filter_like`` is not a filter.
  """
  return _by_kind(_EMPTY, filter_like)


def filter_to_set(x: Filter) -> set:
  """Converts a finite filter into the set of names it matches.

  Raises:
    InvalidFilterError: for ``True`` and ``DenyList`` (infinite sets).
  """
  return _by_kind(_AS_SET, x)


def _infinite(f):
  raise errors.InvalidFilterError(f)


# What a finite-filter question answers for each kind of filter. A filter's
# kind is the first of these types it is an instance of (a string is also
# a collection, so order matters).
_KINDS = (str, bool, DenyList, Collection)
_EMPTY = {
  str: lambda f: False,
  bool: lambda f: not f,
  DenyList: lambda f: f.deny is True,
  Collection: lambda f: not f,
}
_AS_SET = {
  str: lambda f: {f},
  bool: lambda f: _infinite(f) if f else set(),
  DenyList: _infinite,
  Collection: set,
}


def _by_kind(table, f):
  kind = next((k for k in _KINDS if isinstance(f, k)), None)
  if kind is None:
    raise errors.InvalidFilterError(f)
  return table[kind](f)


def _combine(a, b, deny_rules, set_op):
  """Combines two non-constant filters.

  With a DenyList on either side, the rule for ``(a is DenyList, b is
  DenyList)`` rewrites the operation through the complement; otherwise the
  filters are plain names and ``set_op`` combines their sets.
  """
  rule = deny_rules.get((isinstance(a, DenyList), isinstance(b, DenyList)))
  if rule is not None:
    return rule(a, b)
  return set_op(filter_to_set(a), filter_to_set(b))


# not-x | not-y = not-(x & y); not-x | y = not-(x - y).
_UNION_DENY = {
  (True, True): lambda a, b: DenyList(intersect_filters(a.deny, b.deny)),
  (True, False): lambda a, b: DenyList(subtract_filters(a.deny, b)),
  (False, True): lambda a, b: DenyList(subtract_filters(b.deny, a)),
}
# not-x - not-y = y - x; not-x - y = not-(x | y); x - not-y = x & y.
_SUBTRACT_DENY = {
  (True, True): lambda a, b: subtract_filters(b.deny, a.deny),
  (True, False): lambda a, b: DenyList(union_filters(a.deny, b)),
  (False, True): lambda a, b: intersect_filters(a, b.deny),
}
# not-x & not-y = not-(x | y); not-x & y = y - x.
_INTERSECT_DENY = {
  (True, True): lambda a, b: DenyList(union_filters(a.deny, b.deny)),
  (True, False): lambda a, b: subtract_filters(b, a.deny),
  (False, True): lambda a, b: subtract_filters(a, b.deny),
}


def union_filters(a: Filter, b: Filter) -> Filter:
  """Returns a filter matching what ``a`` or ``b`` matches."""
  # ``False`` is the empty set of names (the result is a set).
  if a is True or b is True:
    return True
  return _combine(a, b, _UNION_DENY, operator.or_)


def subtract_filters(a: Filter, b: Filter) -> Filter:
  """Returns a filter matching what ``a`` matches and ``b`` does not."""
  # The checks go in this order: ``True - False`` is ``DenyList(False)``.
  if b is True:
    return False
  if a is True:
    return DenyList(b)
  return _combine(a, b, _SUBTRACT_DENY, operator.sub)


def intersect_filters(a: Filter, b: Filter) -> Filter:
  """Returns a filter matching what both ``a`` and ``b`` match."""
  if a is True:
    return b
  if b is True:
    return a
  return _combine(a, b, _INTERSECT_DENY, operator.and_)


def _copy_containers(x):
  if isinstance(x, Mapping):
    return {k: _copy_containers(v) for k, v in x.items()}
  return x


def group_collections(
  xs: Mapping[str, Any], col_filters: Collection[Filter]
) -> tuple[dict, ...]:
  """Splits the collections of ``xs`` into one group per filter.

  A collection goes into the group of the FIRST filter that matches it;
  collections that no filter matches are left out. Nested dicts are copied
  so that the groups do not share containers with ``xs``.

  >>> from flax.core.scope import group_collections
  >>> xs = {'params': {}, 'batch_stats': {}, 'cache': {}}
  >>> group_collections(xs, ['params', True])
  ({'params': {}}, {'batch_stats': {}, 'cache': {}})

  Args:
    xs: a mapping from collection (or stream) names to values.
    col_filters: the filters, one per group.

  Returns:
    A tuple with one dict per filter.
  """
  cols = list(xs.keys())
  groups = []
  for col_filter in col_filters:
    # A collection joins the first group whose filter takes it.
    taken = {col: in_filter(col_filter, col) for col in cols}
    groups.append({c: _copy_containers(xs[c]) for c in cols if taken[c]})
    cols = [c for c in cols if not taken[c]]
  return tuple(groups)
