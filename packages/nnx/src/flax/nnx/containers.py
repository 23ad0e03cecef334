"""``nnx.List`` and ``nnx.Dict``: Module containers of submodules, Variables
and arrays.

A plain ``list`` or ``dict`` holding arrays or Modules cannot be a static
attribute; these containers are Modules whose items are attributes of their
own, so each item gets a data/static status and a path (``layers/0/kernel``).

>>> from flax import nnx
>>> import jax, jax.numpy as jnp
>>> class Block(nnx.Module):
...   def __init__(self, rngs):
...     self.kernel = nnx.Param(jax.random.normal(rngs.params(), (2, 2)))
>>> class MLP(nnx.Module):
...   def __init__(self, rngs):
...     self.layers = nnx.List([Block(rngs) for _ in range(2)])
>>> model = MLP(nnx.Rngs(0))
>>> sorted(nnx.state(model)['layers'].keys())
[0, 1]
"""

import abc
import collections.abc
import typing as tp

import jax

from flax.nnx import reprlib
from flax.nnx.module import Module, ModuleMeta
from flax.nnx.pytreelib import _set_attribute
from flax.nnx._common import EPOCH

A = tp.TypeVar('A')


class _ContainerMeta(ModuleMeta, abc.ABCMeta):
  pass


def _clear(obj, keys):
  d = vars(obj)
  m = obj._pytree__m
  for k in keys:
    del d[k]
    m.drop_data(k)
  m.version += 1
  EPOCH.value += 1


class List(
  reprlib.SequenceReprMixin,
  Module,
  collections.abc.MutableSequence,
  tp.Generic[A],
  metaclass=_ContainerMeta,
):
  """A mutable sequence that is a Module: its items are graph nodes with
  integer keys (state paths ``0``, ``1``, ...).

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> xs = nnx.List([1, jnp.ones(2)])
  >>> xs.append(nnx.Param(jnp.zeros(1)))
  >>> len(xs), jax.tree.leaves(xs)
  (3, [Array([1., 1.], dtype=float32), Array([0.], dtype=float32)])
  """

  _pytree__key = jax.tree_util.SequenceKey

  def __init__(self, it: tp.Iterable[A] | None = None, /):
    if it is not None:
      for i, value in enumerate(it):
        _set_attribute(self, i, value)

  def _items(self) -> list:
    d = vars(self)
    return [d[i] for i in range(self._len())]

  def _len(self) -> int:
    return sum(1 for k in vars(self) if type(k) is int)

  def _reset(self, items):
    _clear(self, [k for k in vars(self) if type(k) is int])
    for i, value in enumerate(items):
      _set_attribute(self, i, value)

  def __len__(self) -> int:
    return self._len()

  def __iter__(self) -> tp.Iterator[A]:
    return iter(self._items())

  def __getitem__(self, index: int | slice) -> A | tp.List[A]:
    if isinstance(index, slice):
      return self._items()[index]
    n = self._len()
    i = index.__index__()
    if i < 0:
      i += n
    if not 0 <= i < n:
      raise IndexError('List index out of range')
    return vars(self)[i]

  def __setitem__(self, index: int | slice, value: A | tp.Iterable[A]) -> None:
    if isinstance(index, slice):
      items = self._items()
      value = list(value)
      if len(range(*index.indices(len(items)))) != len(value):
        raise ValueError('Length mismatch')
      items[index] = value
      self._reset(items)
      return
    n = self._len()
    i = index.__index__()
    if i < 0:
      i += n
    if not 0 <= i < n:
      raise IndexError('List assignment index out of range')
    _set_attribute(self, i, value)

  def __delitem__(self, index: int | slice) -> None:
    items = self._items()
    del items[index]
    self._reset(items)

  def insert(self, index: int, value: A) -> None:
    items = self._items()
    items.insert(index, value)
    self._reset(items)

  def append(self, value: A) -> None:
    _set_attribute(self, self._len(), value)

  def __eq__(self, other):
    if isinstance(other, List):
      return self._items() == other._items()
    return NotImplemented

  __hash__ = None  # type: ignore[assignment]  # mutable sequence


class Dict(
  reprlib.MappingReprMixin,
  Module,
  collections.abc.MutableMapping,
  tp.Generic[A],
  metaclass=_ContainerMeta,
):
  """A mutable mapping with string keys that is a Module: each item is an
  attribute (``d['a']`` is ``d.a``), with the data/static rules of
  attributes.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> d = nnx.Dict(w=nnx.Param(jnp.ones(2)), name='block')
  >>> d['name'], list(d)
  ('block', ['w', 'name'])
  """

  def __init__(self, *args, **kwargs):
    for key, value in dict(*args, **kwargs).items():
      self[key] = value

  def _keys(self):
    return [
      k for k in vars(self) if not (isinstance(k, str) and k.startswith('_'))
    ]

  def __getitem__(self, key) -> A:
    d = vars(self)
    if key in d and not (isinstance(key, str) and key.startswith('_')):
      return d[key]
    raise KeyError(key)

  def __setitem__(self, key, value) -> None:
    setattr(self, key, value)

  def __delitem__(self, key) -> None:
    if key not in self._keys():
      raise KeyError(key)
    delattr(self, key)

  def __iter__(self) -> tp.Iterator[str]:
    return iter(self._keys())

  def __len__(self) -> int:
    return len(self._keys())

  def __eq__(self, other):
    if isinstance(other, collections.abc.Mapping):
      return dict(self.items()) == dict(other.items())
    return NotImplemented

  __hash__ = object.__hash__


# Flax's module path of the containers.
List.__module__ = Dict.__module__ = 'flax.nnx.helpers'
