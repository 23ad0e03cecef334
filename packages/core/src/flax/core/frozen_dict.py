"""FrozenDict: an immutable, hashable nested mapping that is a JAX pytree.

>>> from flax.core import freeze, unfreeze
>>> variables = freeze({'params': {'bias': 0.0, 'kernel': 1.0}})
>>> variables['params']['kernel']
1.0
>>> rest, params = variables.pop('params')
>>> rest
FrozenDict({})
>>> unfreeze(params)
{'bias': 0.0, 'kernel': 1.0}
"""

import collections.abc
import functools
import operator
from typing import Any, TypeVar

import jax

K = TypeVar('K')
V = TypeVar('V')


def _deep_copy_dicts(xs):
  """Copies the dict structure of ``xs``, unwrapping FrozenDicts.

  The result is a tree of plain dicts (the storage format of FrozenDict);
  leaves are shared, not copied.
  """
  if isinstance(xs, FrozenDict):
    return xs._dict
  if not isinstance(xs, dict):
    return xs
  return {key: _deep_copy_dicts(value) for key, value in xs.items()}


def _indent(text: str, num_spaces: int) -> str:
  pad = ' ' * num_spaces
  return '\n'.join(pad + line if line else line for line in text.split('\n'))


def _pretty(x, num_spaces: int) -> str:
  if isinstance(x, FrozenDict):
    x = x._dict
  if not isinstance(x, dict):
    return repr(x)
  if not x:
    return '{}'
  body = ''.join(
    f'{key}: {_pretty(value, num_spaces)},\n' for key, value in x.items()
  )
  return '{\n' + _indent(body, num_spaces) + '}'


def _refuse_mutation():
  raise ValueError('FrozenDict is immutable.')


class _ListedView:
  """A mapping view whose repr is ``<_label>([...])``."""

  _label = ''

  def __repr__(self):
    return f'{self._label}({list(self)})'


class FrozenKeysView(_ListedView, collections.abc.KeysView):
  """Keys of a FrozenDict."""

  _label = 'frozen_dict_keys'


class FrozenValuesView(_ListedView, collections.abc.ValuesView):
  """Values of a FrozenDict."""

  _label = 'frozen_dict_values'


class FrozenDict(collections.abc.Mapping):
  """An immutable variant of the Python dict.

  Nested dicts are copied on construction and come back as FrozenDicts when
  read. A FrozenDict is hashable when its leaves are, compares equal to any
  mapping with the same items, and is a JAX pytree whose children are
  flattened in sorted key order.

  >>> from flax.core import FrozenDict
  >>> fd = FrozenDict({'b': 1, 'a': {'c': 2}})
  >>> fd['a']
  FrozenDict({
      c: 2,
  })
  >>> fd.copy({'b': 3})['b']
  3
  """

  __slots__ = ('_dict', '_hash')

  def __init__(self, *args, __unsafe_skip_copy__=False, **kwargs):
    if __unsafe_skip_copy__:
      self._dict = dict(*args, **kwargs)
    else:
      self._dict = _deep_copy_dicts(dict(*args, **kwargs))
    self._hash = None

  def __getitem__(self, key):
    value = self._dict[key]
    if isinstance(value, dict):
      return FrozenDict(value, __unsafe_skip_copy__=True)
    return value

  def __len__(self):
    return len(self._dict)

  def __setitem__(self, key, value):
    _refuse_mutation()

  def __contains__(self, key):
    return key in self._dict

  def __delitem__(self, key):
    _refuse_mutation()

  def __iter__(self):
    return iter(self._dict)

  def __repr__(self):
    return self.pretty_repr()

  def __hash__(self):
    # Order-independent: the XOR of the item hashes, computed once.
    if self._hash is None:
      self._hash = functools.reduce(operator.xor, map(hash, self.items()), 0)
    return self._hash

  def __reduce__(self):
    # Pickled as the plain nested dicts, rebuilt by the constructor.
    return FrozenDict, (self.unfreeze(),)

  def keys(self):
    return FrozenKeysView(self)

  def values(self):
    return FrozenValuesView(self)

  def copy(self, add_or_replace=None) -> 'FrozenDict':
    """Returns a new FrozenDict with entries added or replaced.

    Args:
      add_or_replace: a mapping of entries to add or replace.

    Returns:
      A FrozenDict holding the entries of ``self`` updated with
      ``add_or_replace``.
    """
    if not add_or_replace:
      add_or_replace = {}
    return type(self)({**self._dict, **unfreeze(add_or_replace)})

  def pop(self, key) -> tuple['FrozenDict', Any]:
    """Returns ``(a FrozenDict without key, the value of key)``.

    >>> from flax.core import FrozenDict
    >>> state, params = FrozenDict({'params': 1, 'stats': 2}).pop('params')
    >>> state, params
    (FrozenDict({
        stats: 2,
    }), 1)
    """
    value = self[key]
    rest = dict(self._dict)
    del rest[key]
    return type(self)(rest, __unsafe_skip_copy__=True), value

  def unfreeze(self) -> dict:
    """Returns a mutable copy made of plain nested dicts."""
    return unfreeze(self)

  def pretty_repr(self, num_spaces: int = 4) -> str:
    """Returns an indented representation of the nested dicts."""
    return f'FrozenDict({_pretty(self._dict, num_spaces)})'

  def tree_flatten_with_keys(self):
    """Flattens in sorted key order, with ``DictKey`` path entries."""
    keys = tuple(sorted(self._dict))
    return (
      tuple((jax.tree_util.DictKey(k), self._dict[k]) for k in keys),
      keys,
    )

  def tree_flatten(self):
    keys = tuple(sorted(self._dict))
    return tuple(self._dict[k] for k in keys), keys

  @classmethod
  def tree_unflatten(cls, keys, values):
    return cls(dict(zip(keys, values)), __unsafe_skip_copy__=True)


jax.tree_util.register_pytree_with_keys(
  FrozenDict,
  FrozenDict.tree_flatten_with_keys,
  FrozenDict.tree_unflatten,
  FrozenDict.tree_flatten,
)


def freeze(xs: collections.abc.Mapping) -> FrozenDict:
  """Freezes a nested dict into a FrozenDict.

  >>> from flax.core import freeze
  >>> freeze({'a': {'b': 1}})['a']['b']
  1
  """
  return FrozenDict(xs)


def _tree_copy(x):
  """A copy of the pytree ``x`` as JAX rebuilds it.

  Every container node is new and dicts come back in sorted key order (JAX
  flattens dicts by sorted keys); the leaves are shared.
  """
  return jax.tree_util.tree_map(lambda leaf: leaf, x)


def unfreeze(x):
  """Returns a mutable copy of ``x`` made of plain nested dicts.

  A FrozenDict is copied as a pytree: its dicts come back in sorted key
  order. A dict keeps its key order and its values are unfrozen in turn;
  any other value is returned as it is.

  >>> from flax.core import freeze, unfreeze
  >>> unfreeze(freeze({'b': 1, 'a': {'d': 2, 'c': 3}}))
  {'a': {'c': 3, 'd': 2}, 'b': 1}
  >>> unfreeze({'b': 1, 'a': 2})
  {'b': 1, 'a': 2}
  """
  if isinstance(x, FrozenDict):
    return _tree_copy(x._dict)
  if isinstance(x, dict):
    return {key: unfreeze(value) for key, value in x.items()}
  return x


def copy(x, add_or_replace=None):
  """Like ``FrozenDict.copy``, for a FrozenDict or a plain dict.

  A plain dict is copied as a pytree (its dicts in sorted key order), then
  updated with ``add_or_replace``.

  >>> from flax.core import copy
  >>> copy({'b': 1, 'a': 2}, {'c': 3})
  {'a': 2, 'b': 1, 'c': 3}

  Raises:
    TypeError: if ``x`` is neither a FrozenDict nor a dict.
  """
  if not add_or_replace:
    add_or_replace = {}
  if isinstance(x, FrozenDict):
    return x.copy(add_or_replace)
  if isinstance(x, dict):
    new_dict = _tree_copy(x)
    new_dict.update(add_or_replace)
    return new_dict
  raise TypeError(f'Expected FrozenDict or dict, got {type(x)}')


def pop(x, key):
  """Like ``FrozenDict.pop``, for a FrozenDict or a plain dict.

  Returns ``(x without key, value)``; ``x`` itself is not changed. A plain
  dict is copied as a pytree first, so its dicts (the popped value's too)
  come back in sorted key order.

  >>> from flax.core import pop
  >>> pop({'stats': 2, 'params': {'w': 1, 'b': 0}}, 'params')
  ({'stats': 2}, {'b': 0, 'w': 1})

  Raises:
    TypeError: if ``x`` is neither a FrozenDict nor a dict.
  """
  if isinstance(x, FrozenDict):
    return x.pop(key)
  if isinstance(x, dict):
    new_dict = _tree_copy(x)
    value = new_dict.pop(key)
    return new_dict, value
  raise TypeError(f'Expected FrozenDict or dict, got {type(x)}')


def pretty_repr(x, num_spaces: int = 4) -> str:
  """Returns an indented representation of a nested dict or FrozenDict.

  Anything else is shown with ``repr``.

  >>> from flax.core import pretty_repr
  >>> print(pretty_repr({'a': {'b': 1}}))
  {
      a: {
          b: 1,
      },
  }
  """
  if isinstance(x, FrozenDict):
    return x.pretty_repr(num_spaces)
  if isinstance(x, dict):
    return _pretty(x, num_spaces)
  return repr(x)
