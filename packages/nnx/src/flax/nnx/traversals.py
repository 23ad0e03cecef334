"""Flattening and unflattening nested mappings by key paths.

>>> from flax.nnx import traversals
>>> flat = traversals.flatten_mapping({'a': {'b': 1}, 'c': 2})
>>> flat
{('a', 'b'): 1, ('c',): 2}
>>> traversals.unflatten_mapping(flat)
{'a': {'b': 1}, 'c': 2}
"""

from collections.abc import Mapping
from typing import Any, Callable

from flax import struct as struct

IsLeafCallable = Callable[[tuple[Any, ...], Mapping[Any, Any]], bool]


class _EmptyNode:
  """Marks an empty sub-mapping in a flat mapping."""

  __slots__ = ()

  def __repr__(self):
    return '_EmptyNode()'

  def __reduce__(self):
    return (_get_empty_node, ())


def _get_empty_node():
  return empty_node


empty_node = _EmptyNode()


def _walk(xs, is_leaf, keep_empty_nodes):
  """Yields ``(path, leaf)`` of a nested mapping in insertion order."""

  def visit(node, prefix):
    if not isinstance(node, Mapping) or (
      is_leaf is not None and is_leaf(prefix, node)
    ):
      yield prefix, node
      return
    if not node:
      if keep_empty_nodes and prefix:
        yield prefix, empty_node
      return
    for key, value in node.items():
      yield from visit(value, (*prefix, key))

  if not isinstance(xs, Mapping):
    raise TypeError(f'expected a Mapping; got {type(xs).__name__}')
  return visit(xs, ())


def flatten_mapping(
  xs: Mapping[Any, Any],
  /,
  *,
  keep_empty_nodes: bool = False,
  is_leaf: None | IsLeafCallable = None,
  sep: None | str = None,
) -> dict[Any, Any]:
  """Flattens a nested mapping into a dict keyed by paths.

  >>> from flax.nnx import traversals
  >>> xs = {'foo': 1, 'bar': {'a': 2, 'b': {}}}
  >>> traversals.flatten_mapping(xs, keep_empty_nodes=True, sep='/')
  {'foo': 1, 'bar/a': 2, 'bar/b': _EmptyNode()}

  Args:
    xs: a nested mapping (dict, State, FrozenDict...).
    keep_empty_nodes: keep empty sub-mappings as ``empty_node`` entries.
    is_leaf: ``fn(path, value) -> bool``; a mapping for which it returns
      True is kept as a leaf.
    sep: join the path items with ``sep`` into string keys.

  Returns:
    The flat dict.
  """
  items = _walk(xs, is_leaf, keep_empty_nodes)
  if sep is None:
    return dict(items)
  return {sep.join(path): value for path, value in items}


def flatten_to_sequence(
  xs: Mapping[Any, Any],
  /,
  *,
  is_leaf: IsLeafCallable | None = None,
) -> list[tuple[Any, Any]]:
  """The ``(path, leaf)`` pairs of a nested mapping, in insertion order.

  >>> from flax.nnx import traversals
  >>> traversals.flatten_to_sequence({'b': {'x': 1}, 'a': 2})
  [(('b', 'x'), 1), (('a',), 2)]
  """
  return list(_walk(xs, is_leaf, False))


def unflatten_mapping(xs: Any, /, *, sep: str | None = None) -> dict[Any, Any]:
  """Rebuilds a nested dict from a flat mapping (or ``(path, value)`` pairs).

  >>> from flax.nnx import traversals
  >>> traversals.unflatten_mapping({'a/b': 1, 'c': 2}, sep='/')
  {'a': {'b': 1}, 'c': 2}

  Args:
    xs: a mapping keyed by path tuples (or strings joined by ``sep``), or
      an iterable of ``(path, value)`` pairs. ``empty_node`` values become
      empty dicts.
    sep: the separator of string keys.

  Returns:
    A nested dict.
  """
  items = xs.items() if isinstance(xs, Mapping) else xs
  result: dict[Any, Any] = {}
  for path, value in items:
    if sep is not None:
      path = path.split(sep)
    if value is empty_node:
      value = {}
    cursor = result
    for key in path[:-1]:
      cursor = cursor.setdefault(key, {})
    cursor[path[-1]] = value
  return result
