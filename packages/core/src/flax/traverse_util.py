"""Utilities to flatten, unflatten and traverse nested data.

Nested dicts (such as variable collections) are flattened into dicts keyed by
paths:

>>> from flax import traverse_util
>>> flat = traverse_util.flatten_dict({'a': {'b': 1}, 'c': 2}, sep='/')
>>> flat
{'a/b': 1, 'c': 2}
>>> traverse_util.unflatten_dict(flat, sep='/')
{'a': {'b': 1}, 'c': 2}

A :class:`Traversal` selects parts of an immutable structure to read
(``iterate``) or to replace (``update``, which returns a changed copy).
Traversals are to be deprecated: making one warns.

>>> import warnings
>>> data = [{'foo': 1, 'bar': 2}, {'foo': 3, 'bar': 4}]
>>> with warnings.catch_warnings(record=True) as caught:
...   warnings.simplefilter('always')
...   foos = traverse_util.t_identity.each()['foo']
>>> caught[0].category.__name__
'DeprecationWarning'
>>> list(foos.iterate(data))
[1, 3]
>>> foos.update(lambda x: -x, data)
[{'foo': -1, 'bar': 2}, {'foo': -3, 'bar': 4}]
"""

import abc
import collections
import copy
import dataclasses
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import jax

from flax.core.frozen_dict import FrozenDict
from flax.core.frozen_dict import unfreeze

__all__ = [
  'ModelParamTraversal',
  'TraverseAttr',
  'TraverseCompose',
  'TraverseEach',
  'TraverseFilter',
  'TraverseId',
  'TraverseItem',
  'TraverseMerge',
  'TraverseTree',
  'Traversal',
  'empty_node',
  'flatten_dict',
  'path_aware_map',
  't_identity',
  'unflatten_dict',
]

Path = tuple[Any, ...]


class _EmptyNode:
  """Marks an empty dict in a flattened dict (see ``flatten_dict``)."""

  __slots__ = ()

  def __repr__(self):
    return '_EmptyNode()'

  def __reduce__(self):
    return (_empty_node, ())


def _empty_node():
  return empty_node


empty_node = _EmptyNode()


def _is_dict(x) -> bool:
  return isinstance(x, (dict, FrozenDict))


def flatten_dict(xs, keep_empty_nodes=False, is_leaf=None, sep=None):
  """Flattens a nested dict into a dict keyed by paths.

  >>> from flax.traverse_util import flatten_dict
  >>> xs = {'foo': 1, 'bar': {'a': 2, 'b': {}}}
  >>> flatten_dict(xs)
  {('foo',): 1, ('bar', 'a'): 2}
  >>> flatten_dict(xs, keep_empty_nodes=True, sep='.')
  {'foo': 1, 'bar.a': 2, 'bar.b': _EmptyNode()}

  Args:
    xs: a nested dict or FrozenDict.
    keep_empty_nodes: keep empty sub-dicts as ``empty_node`` entries (so
      that ``unflatten_dict`` restores them); by default they are dropped.
    is_leaf: optional ``fn(path, value) -> bool``; when True the value is a
      leaf even if it is a dict.
    sep: if given, keys are the path items joined by ``sep`` instead of
      tuples.

  Returns:
    The flat dict.
  """
  if not _is_dict(xs):
    raise TypeError(f'expected (frozen)dict; got {type(xs)}')

  def key(path):
    return path if sep is None else sep.join(path)

  flat = {}

  def visit(node, prefix):
    if not _is_dict(node) or (is_leaf is not None and is_leaf(prefix, node)):
      flat[key(prefix)] = node
      return
    if not node:
      if keep_empty_nodes and prefix:
        flat[key(prefix)] = empty_node
      return
    for k, value in node.items():
      visit(value, (*prefix, k))

  visit(xs, ())
  return flat


def unflatten_dict(xs, sep=None):
  """Rebuilds a nested dict from a dict keyed by paths.

  >>> from flax.traverse_util import unflatten_dict
  >>> unflatten_dict({('foo',): 1, ('bar', 'a'): 2})
  {'foo': 1, 'bar': {'a': 2}}

  Args:
    xs: a flat dict whose keys are tuples (or strings joined by ``sep``).
      ``empty_node`` values become empty dicts.
    sep: the separator of string keys.

  Returns:
    A nested plain dict.
  """
  if not isinstance(xs, Mapping):
    raise TypeError(f'expected a dict; got {type(xs)}')
  result = {}
  for path, value in xs.items():
    keys = path if sep is None else path.split(sep)
    parents, last = keys[:-1], keys[-1]
    node = result
    for k in parents:
      node = node.setdefault(k, {})
    node[last] = {} if value is empty_node else value
  return result


def path_aware_map(f: Callable[[Path, Any], Any], nested_dict):
  """Maps ``f(path, leaf)`` over the leaves of a nested dict.

  >>> from flax import traverse_util
  >>> params = {'a': {'x': 10, 'y': 3}, 'b': {'x': 20}}
  >>> traverse_util.path_aware_map(
  ...     lambda path, x: x + 5 if 'x' in path else -x, params)
  {'a': {'x': 15, 'y': -3}, 'b': {'x': 25}}

  Args:
    f: a function of ``(path, value)``, where ``path`` is a tuple of keys.
    nested_dict: a nested dict or FrozenDict.

  Returns:
    A new nested dict with the mapped leaves (empty sub-dicts are kept).
  """
  flat = flatten_dict(nested_dict, keep_empty_nodes=True)
  return unflatten_dict(
    {k: v if v is empty_node else f(k, v) for k, v in flat.items()}
  )


# -- Traversals --------------------------------------------------------------


_TRAVERSAL_DEPRECATION = (
  '`flax.traverse_util.Traversal` will be deprecated. If you are using it '
  'for `flax.optim`, use `optax` instead. Refer to the optax update guide '
  'of the Flax documentation for detailed instructions.'
)


class Traversal(abc.ABC):
  """Base class of traversals: lenses over immutable data structures.

  A traversal selects a part of its input. ``iterate`` yields the selected
  values; ``update`` returns a copy of the input where each selected value
  ``v`` is replaced by ``fn(v)`` (the input itself is never changed).
  Traversals chain: ``t.foo`` selects attribute ``foo`` of what ``t``
  selects, ``t['k']`` an item, ``t.each()`` every element, ``t.tree()`` every
  pytree leaf and ``t.filter(fn)`` only matching values.

  Traversals are deprecated: making one (each step of a chain is one) emits
  a DeprecationWarning; transform parameters with ``optax`` or
  :func:`path_aware_map` instead.
  """

  def __new__(cls, *args, **kwargs):
    del args, kwargs
    warnings.warn(_TRAVERSAL_DEPRECATION, DeprecationWarning)
    return super().__new__(cls)

  @abc.abstractmethod
  def update(self, fn: Callable[[Any], Any], inputs):
    """Returns a copy of ``inputs`` with the selected values mapped by fn."""

  @abc.abstractmethod
  def iterate(self, inputs):
    """Yields the values that the traversal selects in ``inputs``."""

  def set(self, values: list, inputs):
    """Returns a copy of ``inputs`` with the selected values replaced.

    Args:
      values: the new values, one per selected value, in ``iterate`` order.
      inputs: the data.

    Raises:
      ValueError: if the number of values is not the number selected.
    """
    remaining = collections.deque(values)

    def take_next(_):
      # Values are handed out in the order ``iterate`` visits them.
      if remaining:
        return remaining.popleft()
      raise ValueError('Not enough values were given to Traversal.set.')

    result = self.update(take_next, inputs)
    if remaining:
      raise ValueError(
        f'Too many values were given to Traversal.set: {len(remaining)} '
        'were not used.'
      )
    return result

  def compose(self, other: 'Traversal') -> 'Traversal':
    """Applies ``other`` to each value selected by this traversal."""
    return TraverseCompose(self, other)

  def merge(self, *traversals: 'Traversal') -> 'Traversal':
    """Selects, in each value this traversal selects, what any of
    ``traversals`` selects (this traversal composed with their union)."""
    return self.compose(TraverseMerge(*traversals))

  def each(self) -> 'Traversal':
    """Selects every element of the selected containers."""
    return self.compose(TraverseEach())

  def tree(self) -> 'Traversal':
    """Selects every pytree leaf of the selected values."""
    return self.compose(TraverseTree())

  def filter(self, fn: Callable[[Any], bool]) -> 'Traversal':
    """Keeps only the selected values for which ``fn`` is True."""
    return self.compose(TraverseFilter(fn))

  def __getattr__(self, attr):
    if attr.startswith('__') and attr.endswith('__'):
      raise AttributeError(attr)
    return self.compose(TraverseAttr(attr))

  def __getitem__(self, key):
    return self.compose(TraverseItem(key))


class TraverseId(Traversal):
  """The identity traversal: selects its whole input."""

  def iterate(self, inputs):
    yield inputs

  def update(self, fn, inputs):
    return fn(inputs)


def _quiet_identity() -> TraverseId:
  # The module's own identity traversal is made without the warning.
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', DeprecationWarning)
    return TraverseId()


t_identity = _quiet_identity()


class TraverseMerge(Traversal):
  """Selects what any of several traversals selects."""

  def __init__(self, *traversals: Traversal):
    self._traversals = traversals

  def iterate(self, inputs):
    for traversal in self._traversals:
      yield from traversal.iterate(inputs)

  def update(self, fn, inputs):
    for traversal in self._traversals:
      inputs = traversal.update(fn, inputs)
    return inputs


class TraverseCompose(Traversal):
  """Applies traversal ``y`` to every value selected by traversal ``x``."""

  def __init__(self, x: Traversal, y: Traversal):
    self._x = x
    self._y = y

  def iterate(self, inputs):
    for value in self._x.iterate(inputs):
      yield from self._y.iterate(value)

  def update(self, fn, inputs):
    return self._x.update(lambda z: self._y.update(fn, z), inputs)


class TraverseFilter(Traversal):
  """Selects the input only if ``fn(input)`` is True."""

  def __init__(self, fn: Callable[[Any], bool]):
    self._fn = fn

  def iterate(self, inputs):
    if self._fn(inputs):
      yield inputs

  def update(self, fn, inputs):
    return fn(inputs) if self._fn(inputs) else inputs


def _replace_field(inputs, name, value):
  if dataclasses.is_dataclass(inputs) and not isinstance(inputs, type):
    return dataclasses.replace(inputs, **{name: value})
  if isinstance(inputs, tuple) and hasattr(type(inputs), '_fields'):
    return inputs._replace(**{name: value})
  # Any other object: a shallow copy with the attribute set.
  outputs = copy.copy(inputs)
  setattr(outputs, name, value)
  return outputs


class TraverseAttr(Traversal):
  """Selects an attribute of a dataclass or named tuple.

  >>> import collections
  >>> from flax.traverse_util import TraverseAttr
  >>> Foo = collections.namedtuple('Foo', 'foo bar')
  >>> import warnings
  >>> with warnings.catch_warnings():
  ...   warnings.simplefilter('ignore', DeprecationWarning)
  ...   foo = TraverseAttr('foo')
  >>> list(foo.iterate(Foo(foo=1, bar=2)))
  [1]
  """

  def __init__(self, attr: str):
    self._attr = attr

  def iterate(self, inputs):
    yield getattr(inputs, self._attr)

  def update(self, fn, inputs):
    value = getattr(inputs, self._attr)
    return _replace_field(inputs, self._attr, fn(value))


class TraverseItem(Traversal):
  """Selects an item (a key, an index or a slice) of a container."""

  def __init__(self, key):
    self._key = key

  def iterate(self, inputs):
    if isinstance(self._key, slice):
      yield from inputs[self._key]
    elif isinstance(self._key, str) and hasattr(type(inputs), '_fields'):
      yield getattr(inputs, self._key)
    else:
      yield inputs[self._key]

  def update(self, fn, inputs):
    key = self._key
    if isinstance(inputs, FrozenDict):
      return inputs.copy({key: fn(inputs[key])})
    if isinstance(inputs, dict):
      result = dict(inputs)
      result[key] = fn(inputs[key])
      return result
    if isinstance(inputs, tuple) and hasattr(type(inputs), '_fields'):
      if isinstance(key, str):
        return inputs._replace(**{key: fn(getattr(inputs, key))})
      items = list(inputs)
      _update_indices(items, key, fn)
      return type(inputs)(*items)
    if isinstance(inputs, list) and isinstance(key, slice):
      # A slice of a list is updated as one value (``fn`` gets the sublist).
      items = list(inputs)
      items[key] = fn(inputs[key])
      return items
    if isinstance(inputs, (list, tuple)):
      items = list(inputs)
      _update_indices(items, key, fn)
      return items if isinstance(inputs, list) else type(inputs)(items)
    raise TypeError(
      f'Cannot update item {key!r} of a {type(inputs).__name__}; item '
      'traversals update dicts, FrozenDicts, lists and tuples.'
    )


def _update_indices(items, key, fn):
  if isinstance(key, slice):
    for i in range(*key.indices(len(items))):
      items[i] = fn(items[i])
  else:
    items[key] = fn(items[key])


class TraverseEach(Traversal):
  """Selects every element of a list or tuple (every value of a dict)."""

  def iterate(self, inputs):
    if isinstance(inputs, dict):
      yield from inputs.values()
    else:
      yield from inputs

  def update(self, fn, inputs):
    if isinstance(inputs, dict):
      return {k: fn(v) for k, v in inputs.items()}
    # Exactly lists and tuples (not namedtuples or FrozenDicts), as in Flax.
    if type(inputs) not in (list, tuple):
      raise ValueError('Only the entries of a list or tuple can be traversed.')
    return type(inputs)(fn(x) for x in inputs)


class TraverseTree(Traversal):
  """Selects every leaf of a pytree."""

  def iterate(self, inputs):
    yield from jax.tree_util.tree_leaves(inputs)

  def update(self, fn, inputs):
    return jax.tree_util.tree_map(fn, inputs)


def _params_dict(inputs):
  if _is_dict(inputs):
    return unfreeze(inputs)
  raise ValueError(
    f'Can only traverse a nested dict or FrozenDict, not {type(inputs)}'
  )


class ModelParamTraversal(Traversal):
  """Selects model parameters by their path.

  ``filter_fn(path, value)`` decides for each leaf of a nested dict; ``path``
  is the keys joined by ``/`` with a leading ``/``, e.g.
  ``'/Dense_0/kernel'``.

  >>> from flax import traverse_util
  >>> params = {'Dense_0': {'kernel': 1.0, 'bias': 0.0}}
  >>> import warnings
  >>> with warnings.catch_warnings():
  ...   warnings.simplefilter('ignore', DeprecationWarning)
  ...   kernels = traverse_util.ModelParamTraversal(lambda p, _: 'kernel' in p)
  >>> list(kernels.iterate(params))
  [1.0]
  >>> kernels.update(lambda x: x * 10, params)
  {'Dense_0': {'bias': 0.0, 'kernel': 10.0}}
  """

  def __init__(self, filter_fn: Callable[[str, Any], bool]):
    self._filter_fn = filter_fn

  def _marked(self, inputs, keep_empty_nodes=False):
    """Yields ``(path, value, selected)`` for each leaf, in path order."""
    flat = flatten_dict(_params_dict(inputs), keep_empty_nodes=keep_empty_nodes)
    for path in sorted(flat):
      value = flat[path]
      selected = value is not empty_node and self._filter_fn(
        '/' + '/'.join(path), value
      )
      yield path, value, selected

  def iterate(self, inputs):
    return (value for _, value, selected in self._marked(inputs) if selected)

  def update(self, fn, inputs):
    new_params = unflatten_dict(
      {
        path: fn(value) if selected else value
        for path, value, selected in self._marked(inputs, True)
      }
    )
    if isinstance(inputs, FrozenDict):
      return FrozenDict(new_params)
    return new_params
