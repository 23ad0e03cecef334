"""Cursors: edit deeply nested immutable data as if it were mutable.

A cursor records changes made through item and attribute access, and
``build()`` returns a copy of the original object with the changes applied
(the original is never modified). Dicts, FrozenDicts, lists, tuples, named
tuples and dataclasses (including ``flax.struct`` dataclasses and Linen
Modules) are supported.

>>> from flax.cursor import cursor
>>> obj = {'a': 1, 'b': (2, 3), 'c': [4, 5]}
>>> cursor(obj)['b'][0].set(10)
{'a': 1, 'b': (10, 3), 'c': [4, 5]}
>>> c = cursor(obj)
>>> c['b'][0] = 10
>>> c['a'] = (100, 200)
>>> c.build()
{'a': (100, 200), 'b': (10, 3), 'c': [4, 5]}
>>> obj
{'a': 1, 'b': (2, 3), 'c': [4, 5]}
"""

import dataclasses
import enum
import operator
from collections.abc import Callable, Generator
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from flax.core.frozen_dict import FrozenDict
from flax.errors import CursorFindError
from flax.errors import TraverseTreeError

__all__ = ['AccessType', 'Cursor', 'Indexable', 'cursor', 'is_named_tuple']

A = TypeVar('A')


class AccessType(enum.Enum):
  """How a child was reached from its parent."""

  ITEM = 1
  ATTR = 2


class ParentKey(NamedTuple):
  parent: 'Cursor'
  key: Any
  access_type: AccessType


def is_named_tuple(obj) -> bool:
  """Whether ``obj`` is an instance of a ``namedtuple`` / ``NamedTuple``.

  >>> import collections
  >>> from flax.cursor import is_named_tuple
  >>> is_named_tuple(collections.namedtuple('N', 'a')(1)), is_named_tuple((1,))
  (True, False)
  """
  return isinstance(obj, tuple) and hasattr(type(obj), '_fields')


_is_namedtuple = is_named_tuple


class Indexable(Protocol):
  """Anything that supports ``obj[key]`` (lists, dicts, tuples, ...)."""

  def __getitem__(self, key) -> Any: ...


def _children(obj):
  """``(key, access_type, value)`` of the children of a container."""
  if isinstance(obj, (dict, FrozenDict)):
    return [(k, AccessType.ITEM, v) for k, v in obj.items()]
  if _is_namedtuple(obj):
    return [(f, AccessType.ATTR, getattr(obj, f)) for f in obj._fields]
  if isinstance(obj, (list, tuple)):
    return [(i, AccessType.ITEM, v) for i, v in enumerate(obj)]
  if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
    return [
      (f.name, AccessType.ATTR, getattr(obj, f.name))
      for f in dataclasses.fields(obj)
      if f.init and hasattr(obj, f.name)
    ]
  return []


def _traverse_tree(path, obj, *, update_fn=None, cond_fn=None):
  """Walks the descendants of ``obj`` top-down (``obj`` itself excluded).

  Paths are tuples of ``(key, AccessType)`` pairs, starting with ``path``;
  the functions get them as the keys joined by ``/``. Give exactly one of:

  * ``update_fn(path, value)``: yields ``(path, new_value)`` where it
    returns another object than ``value`` (whose children are then skipped);
  * ``cond_fn(path, value)``: yields the ``path`` of each node for which it
    is true (whose children are then skipped).

  >>> list(_traverse_tree((), {'a': {'b': 1}}, cond_fn=lambda p, v: v == 1))
  [(('a', <AccessType.ITEM: 1>), ('b', <AccessType.ITEM: 1>))]

  Raises:
    TraverseTreeError: if both functions or neither are given.
  """
  if (update_fn is None) == (cond_fn is None):
    raise TraverseTreeError(update_fn, cond_fn)
  for key, access_type, value in _children(obj):
    child_path = (*path, (key, access_type))
    path_str = '/'.join(str(k) for k, _ in child_path)
    if update_fn is not None:
      new_value = update_fn(path_str, value)
      if new_value is not value:
        yield child_path, new_value
        continue
    elif cond_fn(path_str, value):
      yield child_path
      continue
    yield from _traverse_tree(
      child_path, value, update_fn=update_fn, cond_fn=cond_fn
    )


class Cursor(Generic[A]):
  """A view of a location inside an object that records changes.

  Create one with :func:`cursor`. ``c[key]`` and ``c.attr`` give cursors of
  children; assigning to them records a change; ``build()`` returns the
  changed copy; ``set(value)`` changes this location and returns the built
  root object.
  """

  _obj: A
  _parent_key: ParentKey | None
  _changes: dict[Any, Any]

  def __init__(self, obj: A, parent_key: ParentKey | None):
    object.__setattr__(self, '_obj', obj)
    object.__setattr__(self, '_parent_key', parent_key)
    object.__setattr__(self, '_changes', {})
    # True for a cursor holding an assigned value (a change even if it is
    # the very object that was there).
    object.__setattr__(self, '_assigned', False)

  def _assign(self, key, access_type, value) -> None:
    child = Cursor(value, ParentKey(self, key, access_type))
    object.__setattr__(child, '_assigned', True)
    self._changes[key] = child

  @property
  def _root(self) -> 'Cursor':
    """The cursor this one was reached from (itself for a root)."""
    cur = self
    while cur._parent_key is not None:
      cur = cur._parent_key.parent
    return cur

  @property
  def _path(self) -> str:
    """How this cursor is reached from the root: ``['a'][0].b``."""
    parts = []
    cur = self
    while cur._parent_key is not None:
      key = cur._parent_key.key
      if cur._parent_key.access_type is AccessType.ATTR:
        parts.append(f'.{key}')
      else:
        parts.append(f'[{key!r}]')
      cur = cur._parent_key.parent
    return ''.join(reversed(parts))

  # -- navigation ------------------------------------------------------------

  def _child(self, key, access_type, read):
    current = self._changes.get(key, _MISSING)
    if isinstance(current, Cursor):
      return current
    value = read() if current is _MISSING else current
    child = Cursor(value, ParentKey(self, key, access_type))
    self._changes[key] = child
    return child

  def _field_of(self, key):
    """The field name of item ``key`` of a named tuple (else None).

    A named tuple's items are its fields: ``c[0]`` and ``c.x`` are the same
    child cursor (recorded under the field name, as an attribute).
    """
    obj = self._obj
    if not _is_namedtuple(obj) or isinstance(key, str):
      return None
    if isinstance(key, slice):
      raise TypeError(
        f'Cursor cannot index the named tuple {type(obj).__name__} with a '
        f'slice ({key!r}); use an int index or a field name.'
      )
    return obj._fields[key]

  def __getitem__(self, key) -> 'Cursor':
    obj = self._obj
    if not hasattr(obj, '__getitem__'):
      raise TypeError(f'Cannot index into {obj}')
    field = self._field_of(key)
    if field is not None:
      return self._child(field, AccessType.ATTR, lambda: getattr(obj, field))
    return self._child(key, AccessType.ITEM, lambda: obj[key])

  def __getattr__(self, name) -> 'Cursor':
    if name.startswith('__') and name.endswith('__'):
      raise AttributeError(name)
    obj = self._obj
    if not hasattr(obj, name):
      raise AttributeError(f'Attribute {name} not found in {obj}')
    return self._child(name, AccessType.ATTR, lambda: getattr(obj, name))

  def __setitem__(self, key, value):
    field = self._field_of(key)
    if field is not None:
      self._assign(field, AccessType.ATTR, value)
    else:
      self._assign(key, AccessType.ITEM, value)

  def __setattr__(self, name, value):
    self._assign(name, AccessType.ATTR, value)

  # -- building --------------------------------------------------------------

  def build(self) -> A:
    """Returns a copy of the object with every recorded change applied."""
    obj = self._obj
    changes = {
      key: child.build() if isinstance(child, Cursor) else child
      for key, child in self._changes.items()
    }
    # Cursors that were only read do not change anything.
    changes = {
      key: value
      for key, value in changes.items()
      if not _unchanged(self._changes[key], value)
    }
    if not changes:
      return obj
    if isinstance(obj, FrozenDict):
      return obj.copy(changes)
    if isinstance(obj, (dict, list)):
      new = obj.copy()
      for key, value in changes.items():
        new[key] = value
      return new
    if _is_namedtuple(obj):
      return obj._replace(**changes)
    if isinstance(obj, tuple):
      items = list(obj)
      for key, value in changes.items():
        items[key] = value
      return type(obj)(items)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
      if hasattr(obj, 'clone') and callable(obj.clone):
        return obj.clone(**changes)
      return dataclasses.replace(obj, **changes)
    raise TypeError(
      f'Cursor cannot build an updated {type(obj).__name__}; supported '
      'types are dicts, FrozenDicts, lists, tuples, named tuples and '
      'dataclasses.'
    )

  def set(self, value) -> Any:
    """Replaces the value at this cursor and returns the built root."""
    if self._parent_key is None:
      return value
    parent = self._parent_key.parent
    parent._assign(self._parent_key.key, self._parent_key.access_type, value)
    return parent._root.build()

  def _at(self, path) -> 'Cursor':
    current = self
    for key, access_type in path:
      if access_type is AccessType.ITEM:
        current = current[key]
      else:
        current = getattr(current, key)
    return current

  def apply_update(self, update_fn: Callable[[str, Any], Any]) -> 'Cursor[A]':
    """Records ``update_fn(path, value)`` for every node below this one.

    Nodes are visited top-down; ``path`` is the keys joined by ``/``. When
    ``update_fn`` returns a new object (not the value it was given), that
    becomes the node's new value and its children are not visited.

    Returns:
      This cursor; call ``build()`` for the updated object.
    """
    updates = list(_traverse_tree((), self._obj, update_fn=update_fn))
    for path, new_value in updates:
      *parents, (key, access_type) = path
      parent = self._at(parents)
      parent._assign(key, access_type, new_value)
    return self

  def find_all(
    self, cond_fn: Callable[[str, Any], bool]
  ) -> Generator['Cursor', None, None]:
    """Yields a cursor at every node for which ``cond_fn(path, value)``."""
    for path in list(_traverse_tree((), self._obj, cond_fn=cond_fn)):
      yield self._at(path)

  def find(self, cond_fn: Callable[[str, Any], bool]) -> 'Cursor':
    """The cursor at the only node for which ``cond_fn(path, value)``.

    Raises:
      CursorFindError: if no node or more than one node matches.
    """
    matches = self.find_all(cond_fn)
    first = next(matches, None)
    if first is None:
      raise CursorFindError()
    second = next(matches, None)
    if second is not None:
      raise CursorFindError(first, second)
    return first

  # -- behaving like the value ----------------------------------------------

  def __len__(self):
    return len(self._obj)

  def __iter__(self):
    if isinstance(self._obj, (list, tuple)):
      return (self[i] for i in range(len(self._obj)))
    raise NotImplementedError(
      '__iter__ method only implemented for tuples and lists, not type '
      f'{type(self._obj)}'
    )

  def __reversed__(self):
    if isinstance(self._obj, (list, tuple)):
      return (self[i] for i in reversed(range(len(self._obj))))
    raise NotImplementedError(
      '__reversed__ method only implemented for tuples and lists, not type '
      f'{type(self._obj)}'
    )

  def __eq__(self, other):
    other = other._obj if isinstance(other, Cursor) else other
    return self._obj == other

  def __ne__(self, other):
    other = other._obj if isinstance(other, Cursor) else other
    return self._obj != other

  __hash__ = None

  def __str__(self):
    return str(self._obj)

  def __round__(self, ndigits=None):
    return round(self._obj, ndigits)

  def __repr__(self):
    if self._changes:
      entries = []
      for key, child in self._changes.items():
        prefix = f'    {key!r}: '
        lines = repr(child).split('\n')
        pad = ' ' * len(prefix)
        lines = [prefix + lines[0]] + [pad + line for line in lines[1:]]
        entries.append('\n'.join(lines))
      changes = '{\n' + ',\n'.join(entries) + '\n  }'
    else:
      changes = '{}'
    # A multi-line value is indented with the fields.
    obj = repr(self._obj).replace('\n', '\n  ')
    return f'Cursor(\n  _obj={obj},\n  _changes={changes}\n)'


_MISSING = object()


def _unchanged(recorded, built) -> bool:
  return (
    isinstance(recorded, Cursor)
    and not recorded._assigned
    and built is recorded._obj
  )


def _value(x):
  return x._obj if isinstance(x, Cursor) else x


def _binary(name, op):
  def method(self, other):
    return op(self._obj, _value(other))

  def reflected(self, other):
    return op(_value(other), self._obj)

  for fn, fn_name in ((method, f'__{name}__'), (reflected, f'__r{name}__')):
    fn.__name__ = fn_name
    fn.__qualname__ = f'Cursor.{fn_name}'
  return method, reflected


for _name, _op in [
  ('add', operator.add),
  ('sub', operator.sub),
  ('mul', operator.mul),
  ('matmul', operator.matmul),
  ('truediv', operator.truediv),
  ('floordiv', operator.floordiv),
  ('mod', operator.mod),
  ('divmod', divmod),
  ('pow', operator.pow),
  ('lshift', operator.lshift),
  ('rshift', operator.rshift),
  ('and', operator.and_),
  ('xor', operator.xor),
  ('or', operator.or_),
]:
  _method, _reflected = _binary(_name, _op)
  setattr(Cursor, f'__{_name}__', _method)
  setattr(Cursor, f'__r{_name}__', _reflected)

for _name, _op in [
  ('lt', operator.lt),
  ('le', operator.le),
  ('gt', operator.gt),
  ('ge', operator.ge),
]:
  setattr(Cursor, f'__{_name}__', _binary(_name, _op)[0])

for _name, _op in [
  ('neg', operator.neg),
  ('pos', operator.pos),
  ('abs', operator.abs),
  ('invert', operator.invert),
]:
  setattr(Cursor, f'__{_name}__', lambda self, _op=_op: _op(self._obj))


def cursor(obj: A) -> Cursor[A]:
  """Returns a :class:`Cursor` over ``obj``.

  >>> from flax.cursor import cursor
  >>> params = {'Dense_0': {'kernel': 1.0, 'bias': 0.0}}
  >>> def double_kernels(path, value):
  ...   return value * 2 if path.endswith('kernel') else value
  >>> cursor(params).apply_update(double_kernels).build()
  {'Dense_0': {'kernel': 2.0, 'bias': 0.0}}
  >>> c = cursor(params).find(lambda path, v: path == 'Dense_0/bias')
  >>> c.set(5.0)
  {'Dense_0': {'kernel': 1.0, 'bias': 5.0}}
  """
  return Cursor(obj, None)
