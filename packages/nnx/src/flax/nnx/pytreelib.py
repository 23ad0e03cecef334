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

from flax.nnx._common import (
  EPOCH,
  GraphNodeBase,
  trace_context_error,
  trace_state,
)
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


class Pytree(GraphNodeBase):
  """Base class of NNX objects with reference semantics.

  Subclasses are registered as JAX pytrees (pass ``pytree=False`` in the
  class statement to opt out).
  """

  # ``_pytree__m`` holds NNX's bookkeeping in one list (one slot write
  # per new object): the names of the data attributes (a set), a version
  # bumped on every attribute set/delete, the cached flat view (graph mode)
  # and the cached pytree aux data (tree mode). See the M_* indices.
  __slots__ = ('_pytree__m', '__dict__', '__weakref__')

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
    obj = _new_object(cls)
    obj._pytree__m[M_TRACE] = trace_state()
    return obj

  def __setattr__(self, name, value):
    forced = None
    if isinstance(value, _Marker):
      forced = isinstance(value, _DataMarker)
      value = value.value
    m = self._pytree__m
    if m[M_TRACE] is not None and m[M_TRACE] != trace_state():
      raise trace_context_error(f'{type(self).__name__!r}')
    vars(self)[name] = value
    if forced if forced is not None else is_data(value):
      m[M_DATA].add(name)
    else:
      m[M_DATA].discard(name)
    m[M_VERSION] += 1
    EPOCH.value += 1

  def __delattr__(self, name):
    d = vars(self)
    if name not in d:
      raise AttributeError(
        f'{type(self).__name__!r} object has no attribute {name!r}'
      )
    m = self._pytree__m
    if m[M_TRACE] is not None and m[M_TRACE] != trace_state():
      raise trace_context_error(f'{type(self).__name__!r}')
    del d[name]
    m[M_DATA].discard(name)
    m[M_VERSION] += 1
    EPOCH.value += 1

  def __getstate__(self):
    return {
      'attrs': dict(vars(self)),
      'data': set(self._pytree__m[M_DATA]),
    }

  def __setstate__(self, state):
    vars(self).update(state['attrs'])
    object.__setattr__(
      self, '_pytree__m', [set(state['data']), 0, None, None, None]
    )

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


# Indices into ``Pytree._pytree__m``; M_TRACE is the trace level the object
# was constructed at (None for objects NNX rebuilt, which are unchecked).
M_DATA, M_VERSION, M_VIEW, M_AUX, M_TRACE = range(5)


def _new_object(cls, data=()):
  obj = object.__new__(cls)
  object.__setattr__(obj, '_pytree__m', [set(data), 0, None, None, None])
  return obj


def data_names(obj) -> set:
  """The names of the data attributes of a Pytree (its pytree children in
  tree mode)."""
  return obj._pytree__m[M_DATA]


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


def _aux_of(obj):
  """``(names of data attributes, aux)``, cached until the attributes of
  ``obj`` are set or deleted."""
  m = obj._pytree__m
  cached = m[M_AUX]
  version = m[M_VERSION]
  if cached is not None and cached[0] == version:
    return cached[1], cached[2]
  d = vars(obj)
  data = m[M_DATA]
  names = tuple(sorted(n for n in d if n in data))
  static = tuple(sorted((k, v) for k, v in d.items() if k not in data))
  aux = _StaticAux(type(obj), names, static)
  m[M_AUX] = (version, names, aux)
  return names, aux


def _pytree_flatten(obj):
  names, aux = _aux_of(obj)
  return tuple(map(vars(obj).__getitem__, names)), aux


def _pytree_flatten_with_keys(obj):
  names, aux = _aux_of(obj)
  d = vars(obj)
  return tuple((jax.tree_util.GetAttrKey(n), d[n]) for n in names), aux


def _make_unflatten(cls):
  def unflatten(aux, children):
    obj = _new_object(aux.type, aux.names)
    d = vars(obj)
    d.update(aux.static)
    d.update(zip(aux.names, children))
    return obj

  return unflatten
