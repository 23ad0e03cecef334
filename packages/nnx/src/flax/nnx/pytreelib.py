"""Pytree: the base of NNX objects (Modules, Rngs, Optimizers).

A Pytree is a regular mutable Python object with reference semantics. In
graph mode NNX traverses its attributes (sorted by name); in tree mode it is
also a JAX pytree whose children are its *data* attributes (Variables,
arrays, other Pytrees, or containers of them) and whose other attributes
are static.

>>> from flax import nnx
>>> import jax, jax.numpy as jnp
>>> class Foo(nnx.Pytree):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2))
...     self.name = 'foo'
>>> jax.tree.map(lambda x: x * 2, Foo()).w.value.tolist()
[2.0, 2.0]
"""

import typing as tp

import jax
import numpy as np

from flax.nnx._common import EPOCH
from flax.nnx.variablelib import Variable


class _Marker:
  __slots__ = ('value',)

  def __init__(self, value):
    self.value = value


class _DataMarker(_Marker):
  pass


class _StaticMarker(_Marker):
  pass


def data(value):
  """Marks an attribute value as data (a pytree child in tree mode)."""
  return _DataMarker(value)


def static(value):
  """Marks an attribute value as static (pytree aux data in tree mode)."""
  return _StaticMarker(value)


def is_data(value) -> bool:
  """Whether ``value`` holds data: arrays, Variables, Pytrees, or containers
  of them."""
  if isinstance(value, (Variable, Pytree, jax.Array, np.ndarray)):
    return True
  if isinstance(value, (list, tuple)):
    return any(is_data(v) for v in value)
  if isinstance(value, dict):
    return any(is_data(v) for v in value.values())
  return False


class Pytree:
  """Base class of NNX objects with reference semantics.

  Subclasses are registered as JAX pytrees (pass ``pytree=False`` in the
  class statement to opt out).
  """

  __slots__ = (
    '_pytree__data',
    '_pytree__cache',
    '_pytree__version',
    '__dict__',
    '__weakref__',
  )

  def __init_subclass__(cls, pytree: bool = True, **kwargs):
    super().__init_subclass__(**kwargs)
    if pytree:
      jax.tree_util.register_pytree_with_keys(
        cls,
        _pytree_flatten_with_keys,
        _make_unflatten(cls),
        _pytree_flatten,
      )

  def __new__(cls, *args, **kwargs):
    return _new_object(cls)

  def __setattr__(self, name, value):
    forced = None
    if isinstance(value, _Marker):
      forced = isinstance(value, _DataMarker)
      value = value.value
    vars(self)[name] = value
    data_names = self._pytree__data
    if forced if forced is not None else is_data(value):
      data_names.add(name)
    else:
      data_names.discard(name)
    object.__setattr__(self, '_pytree__version', self._pytree__version + 1)
    EPOCH.value += 1

  def __delattr__(self, name):
    d = vars(self)
    if name not in d:
      raise AttributeError(
        f'{type(self).__name__!r} object has no attribute {name!r}'
      )
    del d[name]
    self._pytree__data.discard(name)
    object.__setattr__(self, '_pytree__version', self._pytree__version + 1)
    EPOCH.value += 1

  def __getstate__(self):
    return {
      'attrs': dict(vars(self)),
      'data': set(self._pytree__data),
    }

  def __setstate__(self, state):
    vars(self).update(state['attrs'])
    object.__setattr__(self, '_pytree__data', set(state['data']))
    object.__setattr__(self, '_pytree__cache', None)
    object.__setattr__(self, '_pytree__version', 0)

  def __reduce_ex__(self, protocol):
    return (_reconstruct, (type(self),), self.__getstate__())

  def __deepcopy__(self, memo):
    import copy

    new = _new_object(type(self))
    memo[id(self)] = new
    new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
    return new

  def __copy__(self):
    new = _new_object(type(self))
    new.__setstate__(self.__getstate__())
    return new

  def __repr__(self):
    from flax.nnx import reprlib

    return reprlib.object_repr(self)

  def _repr_pretty_(self, p, cycle):
    p.text(repr(self))


Object = Pytree


def _reconstruct(cls):
  return _new_object(cls)


def _new_object(cls):
  obj = object.__new__(cls)
  object.__setattr__(obj, '_pytree__data', set())
  object.__setattr__(obj, '_pytree__cache', None)
  object.__setattr__(obj, '_pytree__version', 0)
  return obj


def object_attributes(obj) -> tp.Iterator[tuple[str, tp.Any]]:
  """The attributes of a Pytree, sorted by name."""
  d = vars(obj)
  for key in sorted(d):
    yield key, d[key]


# -- tree mode ----------------------------------------------------------------


class _StaticAux:
  """Static attributes of a Pytree as hashable pytree aux data."""

  __slots__ = ('type', 'names', 'static', '_hash')

  def __init__(self, typ, names, static):
    self.type = typ
    self.names = names
    self.static = static
    self._hash = None

  def __eq__(self, other):
    if type(other) is not _StaticAux:
      return False
    if self.type is not other.type or self.names != other.names:
      return False
    try:
      return bool(self.static == other.static)
    except Exception:
      return self.static is other.static

  def __hash__(self):
    h = self._hash
    if h is None:
      try:
        h = hash((self.type, self.names, self.static))
      except TypeError:
        h = hash((self.type, self.names, tuple(k for k, _ in self.static)))
      self._hash = h
    return h


def _split_attrs(obj):
  d = vars(obj)
  data_names = obj._pytree__data
  names = tuple(sorted(n for n in d if n in data_names))
  static = tuple(sorted((k, v) for k, v in d.items() if k not in data_names))
  return d, names, static


def _pytree_flatten(obj):
  d, names, static = _split_attrs(obj)
  return tuple(d[n] for n in names), _StaticAux(type(obj), names, static)


def _pytree_flatten_with_keys(obj):
  d, names, static = _split_attrs(obj)
  return (
    tuple((jax.tree_util.GetAttrKey(n), d[n]) for n in names),
    _StaticAux(type(obj), names, static),
  )


def _make_unflatten(cls):
  def unflatten(aux, children):
    obj = _new_object(aux.type)
    d = vars(obj)
    d.update(aux.static)
    d.update(zip(aux.names, children))
    obj._pytree__data.update(aux.names)
    return obj

  return unflatten
