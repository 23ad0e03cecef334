"""NNX Variables: mutable containers of the state of a Module.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> w = nnx.Param(jnp.ones((2, 3)))
>>> w[...] = w * 2
>>> float(w[...].sum())
12.0
"""

from __future__ import annotations

import copy as _copy
import dataclasses
import functools
import importlib
import typing as tp
import warnings

import jax
from jax._src import core
from jax._src import effects
from jax._src import hijax as hjx

from flax import config as config
from flax.nnx import _hijax_ops, _vardefaults, _variable_tree, reprlib
from flax.nnx import visualization
from flax.nnx._variable_ops import install_array_behaviour
from flax.nnx._vardefaults import VARIABLE_CONTEXT as VARIABLE_CONTEXT
from flax.nnx._vardefaults import VarDefaults as VarDefaults
from flax.nnx._vardefaults import VarDefaultsContext as VarDefaultsContext
from flax.nnx._vardefaults import VariableContext as VariableContext
from flax.nnx._vardefaults import use_eager_sharding as use_eager_sharding
from flax.nnx._vardefaults import using_eager_sharding as using_eager_sharding
from flax.nnx._vardefaults import var_defaults as var_defaults
from flax.nnx._variable_tree import REF_TYPE as _REF_TYPE
from flax.nnx._variable_tree import is_array_ref as is_array_ref
from flax.nnx._variable_tree import is_array_ref as _is_ref
from flax.nnx._variable_tree import new_ref as _new_ref
from flax.nnx._variable_tree import register as _register
from flax.nnx._variable_tree import store_raw_value as store_raw_value
from flax.nnx._variable_tree import store_raw_values as store_raw_values
from flax.typing import BaseConfigContext as BaseConfigContext
from flax.typing import Missing as Missing
from flax.typing import SizeBytes as SizeBytes
from flax.nnx._common import (
  META_EPOCH,
  MISSING,
  GraphNodeBase,
  trace_context_error,
  trace_state,
)

A = tp.TypeVar('A')

_HOOK_NAMES = (
  'on_set_value',
  'on_get_value',
  'on_create_value',
  'on_add_axis',
  'on_remove_axis',
)
_HOOK_NAME_SET = frozenset(_HOOK_NAMES)
# Metadata every Variable reports (``get_metadata``), with its default;
# only non-default values are stored.
_REQUIRED = ('hijax', 'ref', 'eager_sharding')
_REQUIRED_DEFAULTS = {'hijax': False, 'ref': False, 'eager_sharding': True}
# A Ref passed into a JAX transform is seen as a tracer of a Ref.
_TRACER = jax.core.Tracer
_HOOKS_DEPRECATED = (
  'Variable hooks are deprecated. Define your own Variable type and '
  'override `get_value` and `set_value` instead.'
)
_INTERNAL = frozenset({'_raw_value', '_var_metadata', '_trace_state'})
# Object protocols Python probes on instances, never taken from the value.
_NOT_FORWARDED = frozenset(
  {
    '__dict__',
    '__getstate__',
    '__setstate__',
    '__getnewargs__',
    '__getnewargs_ex__',
    '__reduce__',
    '__reduce_ex__',
    '__copy__',
    '__deepcopy__',
    '__orig_class__',
  }
)
# ``.value`` / ``.raw_value`` are deprecated (as in Flax 0.12.8). Reads warn
# at the caller's line; writes warn from this module (like Flax, so the
# default filters, which show DeprecationWarnings of ``__main__`` only,
# print the read warnings of a script but not the write ones).
_VALUE_GET_DEPRECATED = (
  "'.value' access is now deprecated. For Variable[Array] instances use:\n"
  '\n  variable[...]\n\nFor other Variable types use:\n\n'
  '  variable.get_value()\n'
)
_VALUE_SET_DEPRECATED = (
  "'.value' setter is now deprecated. For Variable[Array] instances use:\n"
  '\n  variable[...] = value\n\nFor other Variable types use:\n\n'
  '  variable.set_value(value)\n'
)
_RAW_GET_DEPRECATED = (
  "'.raw_value' access is now deprecated. Use:\n\n  variable.get_raw_value()\n"
)
_RAW_SET_DEPRECATED = (
  "'.raw_value' setter is now deprecated. Use:\n\n"
  '  variable.set_raw_value(value)\n'
)


def _warn_set(message):
  warnings.warn(message, DeprecationWarning, stacklevel=2)


# Types found to be ``jax.Array`` (arrays, tracers): ``isinstance`` against
# the ``jax.Array`` ABC is slow next to a set lookup on the eager paths
# ``variable[...]`` / ``variable[...] = x``.
_ARRAY_TYPES: set = set()


def _is_array(x) -> bool:
  t = type(x)
  if t in _ARRAY_TYPES:
    return True
  if isinstance(x, jax.Array):
    _ARRAY_TYPES.add(t)
    return True
  return False


@dataclasses.dataclass
class VariableMetadata(tp.Generic[A]):
  """A value together with the hooks and metadata of the Variable it makes.

  Initializers wrapped by :func:`with_metadata` return it; a Variable built
  from it unpacks the value and keeps the metadata.
  """

  raw_value: A
  on_set_value: tuple = ()
  on_get_value: tuple = ()
  on_create_value: tuple = ()
  on_add_axis: tuple = ()
  on_remove_axis: tuple = ()
  metadata: tp.Mapping[str, tp.Any] = dataclasses.field(default_factory=dict)


def _as_tuple(hooks):
  if hooks is None:
    return ()
  if callable(hooks):
    return (hooks,)
  return tuple(hooks)


def _hooks(hooks) -> tuple:
  """Hook metadata (one callable or a sequence of them) as a tuple."""
  if not hooks:
    return ()
  if callable(hooks):
    return (hooks,)
  return tuple(hooks)


def _stored_metadata(metadata) -> dict:
  """``metadata`` without the required entries at their defaults."""
  return {
    k: v
    for k, v in metadata.items()
    if not (k in _REQUIRED_DEFAULTS and v == _REQUIRED_DEFAULTS[k])
  }


def _check_trace(var):
  try:
    created = var._trace_state
  except AttributeError:
    return
  if created is not None and created != trace_state():
    raise trace_context_error(type(var).__name__)


_CORE_SPMD: list = []


def _core_spmd():
  """``flax.core.spmd``, loaded on first use (``from flax import nnx``
  does not import it)."""
  if not _CORE_SPMD:
    _CORE_SPMD.append(importlib.import_module('flax.core.spmd'))
  return _CORE_SPMD[0]


def _shard_eagerly(value, meta):
  """Places ``value`` by its ``out_sharding`` names (eager sharding).

  The names go through the logical axis rules (``sharding_rules`` metadata
  and ``nnx.logical_axis_rules``); the mesh is the ``mesh`` metadata or the
  context mesh (``jax.set_mesh``). Values that are not arrays (e.g.
  ``ShapeDtypeStruct`` under ``nnx.eval_shape``) are left alone.
  """
  if not hasattr(value, 'shape') or isinstance(value, jax.ShapeDtypeStruct):
    return value
  return _core_spmd().shard_value(
    value, meta['out_sharding'], meta.get('sharding_rules'), meta.get('mesh')
  )


def _as_hijax(plain):
  """The hijax Variable of ``plain`` (whose metadata says ``hijax=True``)."""
  plain._var_metadata['hijax'] = False
  return from_variable(plain)


class VariableMeta(type):
  """The metaclass of :class:`Variable` and its subclasses (``type(nnx.Param)``).

  >>> from flax import nnx
  >>> from flax.nnx import variablelib
  >>> type(nnx.Param) is variablelib.VariableMeta
  True

  Creating a subclass records which value hooks it overrides and registers
  it as a JAX pytree.
  """

  def __call__(cls, *args, **kwargs):
    # ``hijax`` is decided here, once per construction: a hijax Variable is
    # another object (``flax.nnx._hijax``), not an initialised ``cls``.
    hijax = kwargs.pop('hijax', None)
    if hijax is None:
      hijax = _vardefaults.default_hijax()
    if hijax:
      return new_variable(cls, *args, **kwargs)
    return type.__call__(cls, *args, **kwargs)

  def __new__(mcs, cls_name, bases, attrs, **kwargs):
    cls = super().__new__(mcs, cls_name, bases, attrs, **kwargs)
    root = globals().get('Variable')
    if root is not None:  # a subclass of Variable (the base registers below)
      cls._has_get_hook = cls.on_get_value is not root.on_get_value
      cls._has_set_hook = cls.on_set_value is not root.on_set_value
      cls._has_hook_methods = any(
        getattr(cls, name) is not getattr(root, name) for name in _HOOK_NAMES
      )
      _register(cls)
    return cls


class Variable(GraphNodeBase, tp.Generic[A], metaclass=VariableMeta):
  """The base class of every Variable type.

  A Variable is a mutable box around a value (usually a ``jax.Array``) plus
  a metadata dict. Subclass it to create new kinds of state; every subclass
  is its own filter in :func:`flax.nnx.state`, :func:`flax.nnx.split` and
  :func:`flax.nnx.pop`.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class Count(nnx.Variable):
  ...   pass
  >>> c = Count(jnp.array(0), tag='steps')
  >>> c[...] += 1
  >>> int(c[...]), c.tag
  (1, 'steps')
  """

  # ``_trace_state`` is the JAX trace a Variable was created in (by its
  # constructor, a copy, ``jax.tree.unflatten`` or NNX's rebuilding); it
  # guards against mutation from another trace level.
  __slots__ = ('_raw_value', '_var_metadata', '_trace_state', '__weakref__')
  _has_get_hook = False
  _has_set_hook = False
  _has_hook_methods = False

  def __init__(
    self,
    value: 'A | VariableMetadata[A]' = MISSING,
    *,
    hijax: bool | None = None,
    ref: bool | None = None,
    eager_sharding: bool | None = None,
    **metadata: tp.Any,
  ):
    if value is MISSING:
      raise TypeError(
        "Variable.__init__() missing 1 required positional argument: 'value'"
      )
    meta = {}
    if isinstance(value, VariableMetadata):
      meta.update(value.metadata)
      for name in _HOOK_NAMES:
        hooks = getattr(value, name)
        if hooks:
          meta[name] = hooks
      value = value.raw_value
    meta.update(metadata)
    for alias in ('sharding_names', 'sharding'):
      if alias in meta:  # older names of ``out_sharding``
        meta['out_sharding'] = meta.pop(alias)
    # ``ref`` / ``eager_sharding`` may also come with the value's metadata
    # (``nnx.with_metadata(init, eager_sharding=False)``)
    if ref is None and 'ref' in meta:
      ref = meta.pop('ref')
    if eager_sharding is None and 'eager_sharding' in meta:
      eager_sharding = meta.pop('eager_sharding')
    if self._has_hook_methods or not _HOOK_NAME_SET.isdisjoint(meta):
      warnings.warn(_HOOKS_DEPRECATED, UserWarning, stacklevel=2)
    if hijax:
      # ``VariableMeta.__call__`` takes ``hijax`` out of the call; it only
      # gets here through a subclass ``__init__`` passing it on.
      raise ValueError(
        'hijax=True must be given to the Variable constructor call (e.g. '
        '`nnx.Param(x, hijax=True)`), not to `Variable.__init__`.'
      )
    if ref is None:
      ref = _vardefaults.default_ref()
    if eager_sharding is None:
      eager_sharding = _vardefaults.using_eager_sharding()
    if ref:
      meta['ref'] = True
    if not eager_sharding:
      meta['eager_sharding'] = False
    object.__setattr__(self, '_var_metadata', meta)
    object.__setattr__(self, '_raw_value', value)
    object.__setattr__(self, '_trace_state', trace_state())
    value = self.create_value(value)
    if eager_sharding and meta.get('out_sharding'):
      value = _shard_eagerly(value, meta)
    if ref:
      value = _new_ref(value)
    object.__setattr__(self, '_raw_value', value)

  def create_value(self, value: A):
    """Runs the create-value hooks (``on_create_value``) on ``value``."""
    value = self.on_create_value(value)
    for hook in _hooks(self._var_metadata.get('on_create_value')):
      value = hook(self, value)
    return value

  # -- value access --------------------------------------------------------
  # Every read goes through ``get_value`` and every write through
  # ``set_value`` (``variable[...]``, operators, ``jnp.asarray``), so a
  # subclass that overrides them sees them all.
  @property
  def value(self) -> A:
    """Deprecated: the value (``variable[...]`` / ``get_value()``)."""
    warnings.warn(_VALUE_GET_DEPRECATED, DeprecationWarning, stacklevel=2)
    return self.get_value()

  @value.setter
  def value(self, value):
    _warn_set(_VALUE_SET_DEPRECATED)
    self.set_value(value)

  @property
  def raw_value(self) -> A:
    """Deprecated: the stored value (``get_raw_value()``)."""
    warnings.warn(_RAW_GET_DEPRECATED, DeprecationWarning, stacklevel=2)
    return self.get_raw_value()

  @raw_value.setter
  def raw_value(self, value):
    _warn_set(_RAW_SET_DEPRECATED)
    self.set_raw_value(value)

  @property
  def ref(self) -> bool:
    """Whether the value is kept in a mutable ``jax.Ref``."""
    return _is_ref(self._raw_value)

  @property
  def hijax(self) -> bool:
    """Whether this is a hijax Variable (``HijaxVariable``)."""
    return False

  @property
  def var_type(self):
    """The Variable type (``type(variable)``)."""
    return type(self)

  @property
  def shape(self):
    """The shape of the value."""
    return self._raw_value.shape

  @property
  def sharding_names(self):
    """Deprecated name of the ``out_sharding`` metadata entry."""
    warnings.warn(
      "'sharding_names' is deprecated; use 'out_sharding' instead.",
      DeprecationWarning,
      stacklevel=2,
    )
    return self._var_metadata.get('out_sharding')

  def get_raw_value(self) -> A:
    """The stored value, without get-value hooks (a ``jax.Ref`` for
    ``ref=True`` Variables)."""
    return self._raw_value

  def set_raw_value(self, value: A, *, _unsafe_bypass_check: bool = False):
    """Stores ``value`` as is, without set-value hooks."""
    current = self._raw_value
    if not _unsafe_bypass_check and not _is_ref(current):
      _check_trace(self)
    if _is_ref(current) and not _is_ref(value):
      current[...] = value
    else:
      object.__setattr__(self, '_raw_value', value)

  def get_value(self, *, index: tp.Any = MISSING) -> A:
    """Returns the value (after get-value hooks), or ``value[index]``.

    ``variable[index]`` calls ``get_value(index=index)``.
    """
    v = self._raw_value
    if type(v) is _REF_TYPE or (isinstance(v, _TRACER) and _is_ref(v)):
      v = v[...]
    if self._has_get_hook:
      v = self.on_get_value(v)
    hooks = self._var_metadata.get('on_get_value')
    if hooks:
      for hook in _hooks(hooks):
        v = hook(self, v)
    if index is MISSING or (index is Ellipsis and _is_array(v)):
      return v
    return v[index]

  def set_value(self, value, *, index: tp.Any = MISSING) -> None:
    """Replaces the value (or ``value[index]``), running set-value hooks.

    ``variable[index] = x`` calls ``set_value(x, index=index)``: an array
    value is updated out of place (``value.at[index].set(x)``, which
    broadcasts ``x`` and keeps the dtype), other values in place.
    """
    current = self._raw_value
    if index is not MISSING:
      if _is_ref(current):
        current = current[...]
      if (
        index is Ellipsis
        and _is_array(value)
        and _is_array(current)
        and value.shape == current.shape
        and value.dtype == current.dtype
      ):
        pass  # the whole value, same shape and dtype: stored as is
      elif hasattr(current, 'at'):
        value = current.at[index].set(value)
      else:
        current[index] = value
        value = current
      current = self._raw_value
    if not _is_ref(current):  # a Ref may be written from any trace
      _check_trace(self)
    if self._has_set_hook:
      value = self.on_set_value(value)
    hooks = self._var_metadata.get('on_set_value')
    if hooks:
      for hook in _hooks(hooks):
        value = hook(self, value)
    if _is_ref(current):
      current[...] = value
    else:
      object.__setattr__(self, '_raw_value', value)

  def __getitem__(self, key):
    return self.get_value(index=key)

  def __setitem__(self, key, value) -> None:
    if isinstance(value, Variable):
      value = value.get_value()
    self.set_value(value, index=key)

  def __call__(self, *args, **kwargs) -> tp.Any:
    return self.get_value()(*args, **kwargs)

  def __contains__(self, item) -> bool:
    return item in self.get_value()

  # -- hooks (override in subclasses) -------------------------------------
  def on_get_value(self, value):
    return value

  def on_set_value(self, value):
    return value

  def on_create_value(self, value):
    return value

  def on_add_axis(self, axis_index, axis_name):
    return self

  def on_remove_axis(self, axis_index, axis_name):
    return self

  def add_axis(self, axis_index: int, axis_name) -> None:
    """Runs the ``on_add_axis`` hooks: a transform added axis
    ``axis_index`` to the value. The ``out_sharding`` names are
    :func:`nnx.spmd.add_axis`'s to update."""
    META_EPOCH.value += 1
    self.on_add_axis(axis_index, axis_name)
    for hook in _hooks(self._var_metadata.get('on_add_axis')):
      hook(self, axis_index, axis_name)

  def remove_axis(self, axis_index: int, axis_name) -> None:
    """Runs the ``on_remove_axis`` hooks: a transform removed axis
    ``axis_index`` of the value. The ``out_sharding`` names are
    :func:`nnx.spmd.remove_axis`'s to update."""
    META_EPOCH.value += 1
    self.on_remove_axis(axis_index, axis_name)
    for hook in _hooks(self._var_metadata.get('on_remove_axis')):
      hook(self, axis_index, axis_name)

  # -- metadata -------------------------------------------------------------
  def get_metadata(self, name=None, default=MISSING, *, exclude_required=None):
    """Returns one metadata entry, or the whole metadata dict.

    Args:
      name: the entry to read; if not given the full dict is returned.
      default: value returned when ``name`` is missing; without it a
        missing entry raises ``KeyError``.
      exclude_required: leave out the entries every Variable has
        (``hijax``, ``ref``, ``eager_sharding``).

    Returns:
      The entry, or a copy of all metadata.
    """
    stored = self._var_metadata
    if name is None:
      meta = {k: v for k, v in stored.items() if k not in _REQUIRED_DEFAULTS}
      if not exclude_required:
        for key, value in _REQUIRED_DEFAULTS.items():
          meta[key] = stored.get(key, value)
      return meta
    if name in stored:
      return stored[name]
    if name in _REQUIRED_DEFAULTS:
      return _REQUIRED_DEFAULTS[name]
    if default is not MISSING:
      return default
    raise KeyError(
      f'{type(self).__name__} has no metadata entry {name!r}; entries: '
      f'{sorted(self._var_metadata)}'
    )

  def set_metadata(self, *args, **kwargs) -> None:
    """Sets metadata: ``(dict)`` replaces all, ``(name, value)`` sets one,
    keyword arguments update several entries."""
    _check_trace(self)
    META_EPOCH.value += 1
    if args and kwargs:
      raise TypeError(
        'set_metadata takes positional or keyword arguments, not both.'
      )
    if len(args) == 1:
      if not isinstance(args[0], tp.Mapping):
        raise TypeError(
          'set_metadata(x) expects a mapping that replaces the metadata, '
          f'got {type(args[0]).__name__}.'
        )
      object.__setattr__(self, '_var_metadata', _stored_metadata(args[0]))
    elif len(args) == 2:
      self._var_metadata[args[0]] = args[1]
    elif args:
      raise TypeError(
        f'set_metadata takes 1 or 2 positional arguments, got {len(args)}.'
      )
    else:
      self._var_metadata.update(kwargs)

  def has_metadata(self, name: str) -> bool:
    """Whether the metadata has an entry ``name``."""
    return name in self._var_metadata or name in _REQUIRED_DEFAULTS

  def del_metadata(self, name: str) -> None:
    """Deletes the metadata entry ``name``."""
    _check_trace(self)
    META_EPOCH.value += 1
    del self._var_metadata[name]

  @property
  def metadata(self):
    return self._var_metadata

  @property
  def type(self):
    """The type of the Variable."""
    return type(self)

  def __getattr__(self, name):
    # Metadata, then the stored value's attributes, NumPy's protocols
    # included (``__array__``, ``__array_priority__``, ... exist when the
    # value has them, as NumPy looks them up on the instance); the value's
    # own AttributeError otherwise.
    if name in _INTERNAL or name in _NOT_FORWARDED:
      raise AttributeError(name)
    meta = object.__getattribute__(self, '_var_metadata')
    if name in meta:
      return meta[name]
    return getattr(object.__getattribute__(self, '_raw_value'), name)

  def __setattr__(self, name, value):
    if name in _INTERNAL or name[:2] == '__' == name[-2:]:
      # dunders (``__class__``, ...) keep Python's meaning, not metadata
      object.__setattr__(self, name, value)
    elif name == 'value':
      _warn_set(_VALUE_SET_DEPRECATED)
      self.set_value(value)
    elif name == 'raw_value':
      _warn_set(_RAW_SET_DEPRECATED)
      self.set_raw_value(value)
    elif hasattr(type(self), name) and isinstance(
      getattr(type(self), name), property
    ):
      object.__setattr__(self, name, value)
    else:
      _check_trace(self)
      META_EPOCH.value += 1
      self._var_metadata[name] = value

  def __delattr__(self, name):
    if name in self._var_metadata:
      _check_trace(self)
      META_EPOCH.value += 1
      del self._var_metadata[name]
    else:
      object.__delattr__(self, name)

  # -- copies -----------------------------------------------------------------
  def copy(
    self, value: tp.Any = MISSING, *, _copy_ref: bool = True, **updates
  ) -> 'Variable[tp.Any]':
    """A new Variable of the same type and metadata (updated with
    ``updates``), holding ``value`` or this Variable's value. A
    ``ref=True`` Variable gets a fresh ``jax.Ref`` unless ``_copy_ref`` is
    False."""
    new = object.__new__(type(self))
    raw = self._raw_value if value is MISSING else value
    meta = dict(self._var_metadata)
    meta.update(updates)
    # The copy keeps its value in a (new) Ref when this Variable does, or
    # when ``ref=True`` is asked for; ``ref=False`` reads a Ref out.
    # ``_copy_ref=False`` stores the value as given.
    want_ref = meta.pop('ref', False) if 'ref' in updates else self.ref
    if want_ref:
      meta['ref'] = True
      if _copy_ref:
        raw = _new_ref(raw[...] if _is_ref(raw) else raw)
    else:
      meta.pop('ref', None)
      if _is_ref(raw):
        raw = raw[...]
    object.__setattr__(new, '_raw_value', raw)
    object.__setattr__(new, '_var_metadata', meta)
    object.__setattr__(new, '_trace_state', trace_state())
    if meta.get('hijax') and not self.hijax:
      # ``copy(hijax=True)``: a hijax Variable (another object).
      return _as_hijax(new)
    return new

  def replace(
    self, value: tp.Any = MISSING, *, _copy_ref: bool = True, **updates
  ) -> 'Variable[tp.Any]':
    """Like :meth:`copy`, with a new value and/or metadata entries."""
    return self.copy(value, _copy_ref=_copy_ref, **updates)

  def copy_from(self, other: 'Variable') -> None:
    """Makes this Variable hold ``other``'s value and metadata."""
    META_EPOCH.value += 1
    object.__setattr__(self, '_raw_value', other._raw_value)
    object.__setattr__(self, '_var_metadata', dict(other._var_metadata))

  def update_from_state(self, variable_state: 'Variable[A]'):
    """Takes ``variable_state``'s value and metadata (used by
    ``nnx.update``)."""
    current = self._raw_value
    new = variable_state._raw_value
    if _is_ref(current) and not _is_ref(new):
      current[...] = new
    else:
      object.__setattr__(self, '_raw_value', new)
    self._var_metadata.update(variable_state._var_metadata)

  def to_state(
    self, value: tp.Any = MISSING, *, _copy_ref: bool = True, **updates
  ) -> 'Variable[tp.Any]':
    """A copy of this Variable (see :meth:`copy`)."""
    return self.copy(value, _copy_ref=_copy_ref, **updates)

  @classmethod
  def from_metadata(cls, value: A, attributes: dict) -> 'Variable[A]':
    """A Variable of this type holding ``value`` with metadata
    ``attributes`` (no hooks run)."""
    new = object.__new__(cls)
    object.__setattr__(new, '_raw_value', value)
    object.__setattr__(new, '_var_metadata', _stored_metadata(attributes))
    object.__setattr__(new, '_trace_state', trace_state())
    if attributes.get('hijax'):
      return _as_hijax(new)
    return new

  def __copy__(self):
    return self.copy()

  def __deepcopy__(self, memo):

    new = object.__new__(type(self))
    memo[id(self)] = new
    object.__setattr__(new, '_raw_value', _copy.deepcopy(self._raw_value, memo))
    object.__setattr__(
      new, '_var_metadata', _copy.deepcopy(self._var_metadata, memo)
    )
    object.__setattr__(new, '_trace_state', trace_state())
    return new

  def __getstate__(self):
    return {'raw_value': self._raw_value, 'metadata': self._var_metadata}

  def __setstate__(self, state):
    object.__setattr__(self, '_raw_value', state['raw_value'])
    object.__setattr__(self, '_var_metadata', state['metadata'])

  # -- repr -------------------------------------------------------------------
  # The name a Pytree's repr totals Variables of this type under (None: the
  # name of their ``var_type``).
  _repr_group: tp.ClassVar[str | None] = None

  def __repr__(self):
    return reprlib.variable_repr(self, 0)

  def _repr_at_level(self, level: int, short: bool = False) -> str:
    return reprlib.variable_repr(self, level, short)

  def _repr_pretty_(self, p, cycle):
    p.text(repr(self))

  def __treescope_repr__(self, path, subtree_renderer):
    value, comment = reprlib.variable_shown(self)
    attributes = {'value': value, **self._var_metadata}
    return visualization.render_object(
      self, attributes, comment, path, subtree_renderer
    )


# Array behaviour (protocols, operators, ``==``) is installed from its own
# module.

install_array_behaviour(Variable)
_register(Variable)
_variable_tree.bind_slots(Variable)


class Param(Variable[A]):
  """The canonical learnable parameter.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> nnx.Param(jnp.zeros(3)).shape
  (3,)
  """


class BatchStat(Variable[A]):
  """Running batch statistics (e.g. the mean and variance of BatchNorm)."""


class Cache(Variable[A]):
  """Autoregressive cache (e.g. of MultiHeadAttention decoding)."""


class Intermediate(Variable[A]):
  """Intermediate values, typically collected with ``Module.sow``."""


class Perturbation(Intermediate[A]):
  """Zero-valued variables added by ``Module.perturb`` to take gradients of
  intermediate values."""


# ----------------------------------------------------------------------------
# with_metadata: initializers whose results carry Variable metadata
# ----------------------------------------------------------------------------


def with_metadata(
  initializer,
  on_set_value=(),
  on_get_value=(),
  on_create_value=(),
  on_add_axis=(),
  on_remove_axis=(),
  **metadata,
):
  """Wraps ``initializer`` so that its result carries Variable metadata.

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> init = nnx.with_metadata(jax.nn.initializers.ones, tag='encoder')
  >>> p = nnx.Param(init(jax.random.key(0), (2,)))
  >>> p.tag
  'encoder'

  Sharding metadata (``out_sharding``) places the value eagerly, so it needs
  a mesh:

  >>> mesh = jax.make_mesh((1,), ('a',))
  >>> init = nnx.with_metadata(jax.nn.initializers.ones, out_sharding=('a',))
  >>> with jax.set_mesh(mesh):
  ...   p = nnx.Param(init(jax.random.key(0), (2,)))
  >>> p.out_sharding, p[...].sharding.spec
  (('a',), P('a',))
  """
  if any(
    (on_set_value, on_get_value, on_create_value, on_add_axis, on_remove_axis)
  ):
    warnings.warn(
      'Variable hooks are deprecated: subclass Variable and override '
      '`get_value` / `set_value` instead.',
      UserWarning,
      stacklevel=2,
    )

  @functools.wraps(initializer)
  def wrapper(*args, **kwargs):
    return VariableMetadata(
      initializer(*args, **kwargs),
      on_set_value=_as_tuple(on_set_value),
      on_get_value=_as_tuple(on_get_value),
      on_create_value=_as_tuple(on_create_value),
      on_add_axis=_as_tuple(on_add_axis),
      on_remove_axis=_as_tuple(on_remove_axis),
      metadata=dict(metadata),
    )

  return wrapper


# ----------------------------------------------------------------------------
# The registry pairing Linen collection names with NNX Variable types
# ----------------------------------------------------------------------------


_NAME_TO_TYPE: dict = {}
_TYPE_TO_NAME: dict = {}


def register_variable_name(name: str, typ=MISSING, *, overwrite=False):
  """Registers a pair of Linen collection name and NNX Variable type.

  Can be used as a class decorator: ``@nnx.register_variable_name('foo')``.
  """
  if typ is MISSING:
    return lambda t: register_variable_name(name, t, overwrite=overwrite)
  if not overwrite and name in _NAME_TO_TYPE and _NAME_TO_TYPE[name] is not typ:
    raise ValueError(
      f'Name {name!r} is already registered to '
      f'{_NAME_TO_TYPE[name].__name__}; pass overwrite=True to replace it.'
    )
  _NAME_TO_TYPE[name] = typ
  _TYPE_TO_NAME[typ] = name
  return typ


def variable_name_from_type(typ, /, *, allow_register=False) -> str:
  """Given an NNX Variable type, returns its Linen-style collection name.

  >>> from flax import nnx
  >>> from flax.nnx import variablelib
  >>> variablelib.variable_name_from_type(nnx.Param)
  'params'
  >>> variablelib.variable_type_from_name('batch_stats') is nnx.BatchStat
  True
  """
  if typ in _TYPE_TO_NAME:
    return _TYPE_TO_NAME[typ]
  if not allow_register:
    raise ValueError(
      f'Type {typ} is not registered in the registry. To register a name, '
      'use `register_variable_name()` or pass allow_register=True.'
    )
  name = typ.__name__
  register_variable_name(name, typ)
  return name


def variable_type_from_name(name: str, /, *, base=None, allow_register=False):
  """Given a Linen-style collection name, gets or creates its Variable type
  (a subclass of ``base``, by default :class:`~flax.nnx.Variable`)."""
  if name in _NAME_TO_TYPE:
    return _NAME_TO_TYPE[name]
  if not allow_register:
    raise ValueError(
      f'Name {name!r} is not registered in the registry. To register a new '
      'name, use `register_variable_name()` or pass allow_register=True.'
    )
  if base is None:
    base = Variable
  typ = type(name, (base,), {})
  register_variable_name(name, typ)
  return typ


# Linen collection names of the built-in Variable types.
register_variable_name('params', Param)
register_variable_name('batch_stats', BatchStat)
register_variable_name('cache', Cache)
register_variable_name('intermediates', Intermediate)
register_variable_name('perturbations', Perturbation)


# Flax 0.12 merged VariableState into Variable; the old name stays an alias.
VariableState = Variable

# ----------------------------------------------------------------------------
# Hijax Variables (see :class:`HijaxVariable`): the JAX side of their type,
# the effect their primitives carry and the quasi-dynamic data (what one
# holds at one point of a traced program) JAX tracks for each.
# ----------------------------------------------------------------------------


PyTreeDef = tp.Any


class VariableEffect(effects.Effect):
  """The effect of reading, writing or creating a hijax Variable."""


variable_effect = VariableEffect()
effects.control_flow_allowed_effects.add_type(VariableEffect)
effects.custom_derivatives_allowed_effects.add_type(VariableEffect)


@dataclasses.dataclass(frozen=True)
class VariableQDD(core.QuasiDynamicData):
  """What a mutable hijax Variable holds at one point of a traced program:
  the abstract values of its leaves, the pytree structure of the plain
  Variable they make up (its type and metadata), and that type."""

  leaf_avals: tuple[core.AbstractValue, ...]
  treedef: PyTreeDef
  var_type: type[Variable[tp.Any]]

  def to_tangent_qdd(self):
    tangents = tuple(a.to_tangent_aval() for a in self.leaf_avals)
    return VariableQDD(tangents, self.treedef, self.var_type)

  def normalize(self):
    leaves = tuple(a.normalize() for a in self.leaf_avals)
    return VariableQDD(leaves, self.treedef, self.var_type)


# ----------------------------------------------------------------------------
# Hijax Variables: Variables that are first-class JAX values
# ----------------------------------------------------------------------------

# The slot holding a Variable's stored value, and the slots of the object
# itself (never routed through the primitives).
_SLOT = '_raw_value'
_OWN = frozenset({_SLOT, '_var_metadata', '_trace_state', '_hijax_type'})
# ``.value`` is deprecated for every Variable (reading it on a hijax
# Variable is refused).
_VALUE_SET = _VALUE_SET_DEPRECATED


# The effect and quasi-dynamic data of the type live in _hijax_qdd.


# -- reading and writing through the primitives --------------------------------


def _under_eval() -> bool:
  return isinstance(core.trace_ctx.trace, core.EvalTrace)


def _type_of(hv) -> type:
  """The Variable type the hijax Variable ``hv`` stands for."""
  return object.__getattribute__(hv, '_hijax_type')


def _plain_of(hv) -> Variable:
  """A plain Variable of ``hv``'s type sharing nothing mutable with it."""
  plain = object.__new__(_type_of(hv))
  object.__setattr__(plain, _SLOT, getattr(hv, _SLOT))
  object.__setattr__(plain, '_var_metadata', dict(hv._var_metadata))
  return plain


def _store(hv, plain: Variable) -> None:
  # A hijax Variable lists its metadata sorted by name.
  meta = dict(sorted(plain._var_metadata.items(), key=lambda kv: str(kv[0])))
  object.__setattr__(hv, _SLOT, getattr(plain, _SLOT))
  object.__setattr__(hv, '_var_metadata', meta)


def _qdd_of(hv) -> VariableQDD:
  leaves, treedef = jax.tree.flatten(_plain_of(hv))
  avals = tuple(core.typeof(leaf) for leaf in leaves)
  return VariableQDD(avals, treedef, _type_of(hv))


def _read(hijax_var) -> Variable:
  """The plain Variable ``hijax_var`` (a HijaxVariable or its tracer) holds."""
  if type(hijax_var) in _HIJAX_CLASSES and _under_eval():
    return _plain_of(hijax_var)
  aval = core.typeof(hijax_var)
  if aval.ref:
    raise ValueError(
      f'A hijax {aval.var_type.__name__} created with ref=True cannot be '
      'used inside a JAX transform; a hijax Variable (ref=False) can be '
      'updated in place inside jax.jit already.'
    )
  if aval.has_qdd:
    qdd = core.cur_qdd(hijax_var)
    treedef, avals = qdd.treedef, qdd.leaf_avals
  else:
    treedef, avals = aval.treedef, aval.leaves
  leaves = get_variable_p.bind(
    hijax_var,
    treedef=treedef,
    avals=tuple(avals),
    var_type=aval.var_type,
    has_qdd=aval.has_qdd,
  )
  return jax.tree.unflatten(treedef, leaves)


def _write(hijax_var, plain: Variable) -> None:
  """Makes ``hijax_var`` hold the content of the plain Variable ``plain``."""
  if type(hijax_var) in _HIJAX_CLASSES and _under_eval():
    _store(hijax_var, plain)
    return
  aval = core.typeof(hijax_var)
  if not aval.has_qdd:
    raise ValueError(
      f'Cannot update a hijax {aval.var_type.__name__} created with '
      'ref=True inside a JAX transform; a hijax Variable (ref=False) can be '
      'updated in place inside jax.jit already.'
    )
  leaves, treedef = jax.tree.flatten(plain)
  set_variable_p.bind(hijax_var, *leaves, treedef=treedef, var_type=type(plain))


def _new(plain: Variable):
  """A hijax Variable holding the content of the plain Variable ``plain``
  (its ``mutable`` metadata is only recorded: JAX tracks what every hijax
  Variable holds, except a ``ref=True`` one, whose type fixes it)."""
  _install_tracer_instancecheck()
  ref = plain.ref
  leaves, treedef = jax.tree.flatten(plain)
  return new_variable_p.bind(
    *leaves,
    treedef=treedef,
    var_type=type(plain),
    has_qdd=not ref,
    ref=ref,
  )


def _from_leaves(treedef, var_type, leaves):
  plain = jax.tree.unflatten(treedef, leaves)
  hv = object.__new__(HijaxVariable)
  object.__setattr__(hv, '_hijax_type', var_type)
  _store(hv, plain)
  return hv


# -- the hijax type --------------------------------------------------------------


def _values_of(*args):
  return tuple(_read(a).get_value() if _is_hijax_value(a) else a for a in args)


def _is_hijax_value(x) -> bool:
  if type(x) in _HIJAX_CLASSES:
    return True
  return isinstance(x, core.Tracer) and type(x.aval) is AbstractVariable


# Metadata names of the hijax Variables made so far (those a traced one
# answers as attributes); names JAX looks up on types are left out.
_METADATA_NAMES: set = set()
_JAX_NAMES = frozenset(
  {
    'hijax',
    'ref',
    'mutable',
    'sharding',
    'weak_type',
    'shape',
    'dtype',
    'ndim',
    'size',
    'type',
    'value',
  }
)


def _metadata_of(tracer, name):
  metadata = _read(tracer).get_metadata()
  if name not in metadata:
    raise AttributeError(
      f'{type(tracer).__name__} of a hijax Variable has no attribute {name!r}'
    )
  return metadata[name]


class AbstractVariable(hjx.MutableHiType, tp.Generic[A]):
  """The JAX type of a hijax Variable (``jax.typeof(variable)``).

  A hijax Variable (``has_qdd=True``) keeps its content out of the type:
  two of them have the same type when their Variable types are the same,
  and JAX tracks what each holds as quasi-dynamic data
  (:class:`VariableQDD`), so it can be updated inside a transform (whatever
  its ``mutable`` metadata says). A ``ref=True`` one has its pytree
  structure and leaf types in the type itself.
  """

  def __init__(
    self,
    var_type: type[Variable[A]],
    treedef: PyTreeDef | None,
    leaves: tuple[core.AbstractValue, ...] | None,
    has_qdd: bool,
    *,
    ref: bool = False,
  ):
    if not has_qdd and (treedef is None or leaves is None):
      raise ValueError(
        'An immutable AbstractVariable (has_qdd=False) needs its treedef and '
        'leaf types.'
      )
    self.var_type = var_type
    self.treedef = treedef
    self.leaves = None if leaves is None else tuple(leaves)
    self.has_qdd = has_qdd
    self._ref = ref

  def _key(self):
    if self.has_qdd:
      return (self.var_type, True, self._ref)
    return (self.var_type, False, self._ref, self.treedef, self.leaves)

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return type(other) is AbstractVariable and self._key() == other._key()

  def str_short(self, short_dtypes=False, **_) -> str:
    return f'{self.var_type.__name__}()'

  def __repr__(self):
    return self.str_short()

  @property
  def hijax(self) -> bool:
    return True

  @property
  def ref(self) -> bool:
    return self._ref

  @property
  def type(self):
    return self.var_type

  @property
  def cur_qdd(self):
    if self.has_qdd:
      raise AttributeError(
        'The content of a mutable hijax Variable is not part of its type; '
        'use jax.typeof(x) on its value (x[...]) or x.type_state().'
      )
    return VariableQDD(self.leaves, self.treedef, self.var_type)

  def _single_leaf(self, what):
    if self.has_qdd or len(self.leaves) != 1:
      raise AttributeError(
        f'{what} is not part of the type of a mutable hijax '
        f'{self.var_type.__name__}; read it from its value: variable[...].'
        f'{what}'
      )
    return self.leaves[0]

  def __getattr__(self, name):
    # ``variable.tag`` on a traced hijax Variable: JAX's Tracer looks the
    # name up on its type; a metadata name gives a property that reads the
    # metadata the tracer holds.
    if name in _METADATA_NAMES:
      return core.aval_property(lambda tracer: _metadata_of(tracer, name))
    prop = getattr(type(self), name, None)
    if isinstance(prop, property):
      return prop.fget(self)  # a property that raised: its own message
    raise AttributeError(
      f'{type(self).__name__!r} object has no attribute {name!r}'
    )

  shape = property(lambda self: self._single_leaf('shape').shape)
  dtype = property(lambda self: self._single_leaf('dtype').dtype)
  ndim = property(lambda self: self._single_leaf('ndim').ndim)
  size = property(lambda self: self._single_leaf('size').size)

  # mutable (has_qdd) lowering: one low value per leaf of the content.
  def lo_ty_qdd(self, variable_state: VariableQDD) -> list:
    return [t for a in variable_state.leaf_avals for t in a.lo_ty()]

  def new_from_loval(self, variable_state: VariableQDD, *lo_vals):
    leaves = _raise_leaves(variable_state.leaf_avals, lo_vals)
    return _from_leaves(variable_state.treedef, self.var_type, leaves)

  def read_loval(self, variable_state: VariableQDD, variable) -> list:
    leaves, treedef = jax.tree.flatten(_plain_of(variable))
    if treedef != variable_state.treedef:
      raise ValueError(
        f'hijax {self.var_type.__name__} changed structure outside the '
        f'traced program: {treedef} vs {variable_state.treedef}'
      )
    return _lower_leaves(variable_state.leaf_avals, leaves)

  def update_from_loval(self, box_state: VariableQDD, variable, *lo_vals):
    leaves = _raise_leaves(box_state.leaf_avals, lo_vals)
    _store(variable, jax.tree.unflatten(box_state.treedef, leaves))

  # immutable lowering: the content is part of the type.
  def lo_ty(self):
    if self.has_qdd:
      return super().lo_ty()
    return [t for a in self.leaves for t in a.lo_ty()]

  def lower_val(self, hi_val):
    leaves = jax.tree.leaves(_plain_of(hi_val))
    return _lower_leaves(self.leaves, leaves)

  def raise_val(self, *lo_vals):
    leaves = _raise_leaves(self.leaves, lo_vals)
    return _from_leaves(self.treedef, self.var_type, leaves)

  def to_tangent_aval(self):
    leaves = None
    if self.leaves is not None:
      leaves = tuple(a.to_tangent_aval() for a in self.leaves)
    return AbstractVariable(
      self.var_type, self.treedef, leaves, self.has_qdd, ref=self._ref
    )


def _lower_leaves(avals, leaves) -> list:
  return [lo for a, leaf in zip(avals, leaves) for lo in a.lower_val(leaf)]


def _raise_leaves(avals, lo_vals) -> list:
  lo = iter(lo_vals)
  out = []
  for a in avals:
    n = len(a.lo_ty())
    out.append(a.raise_val(*[next(lo) for _ in range(n)]))
  return out


# -- primitives ---------------------------------------------------------------------


def _no_derivative(what, primitive):
  if primitive is not None:
    raise NotImplementedError(
      f"jvp not implemented for '{primitive}' with QDD: cannot differentiate "
      f'{what} a hijax Variable; differentiate with respect to its value '
      '(variable[...]) instead, or wrap the value in jax.lax.stop_gradient.'
    )
  raise ValueError(
    f'Cannot differentiate {what} a hijax Variable; differentiate with '
    'respect to its value (variable[...]) instead, or wrap the value in '
    'jax.lax.stop_gradient.'
  )


class NewVariable(hjx.HiPrimitive):
  """Creates a hijax Variable from the leaves of a plain Variable."""

  def is_high(self, *leaves, treedef, var_type, has_qdd, ref) -> bool:
    return True

  def abstract_eval(self, *leaves, treedef, var_type, has_qdd, ref):
    if has_qdd:
      aval = AbstractVariable(var_type, None, None, True, ref=ref)
      return core.AvalQDD(aval, VariableQDD(leaves, treedef, var_type)), {
        variable_effect
      }
    aval = AbstractVariable(var_type, treedef, leaves, False, ref=ref)
    return aval, {variable_effect}

  def impl(self, *leaves, treedef, var_type, has_qdd, ref):
    return _from_leaves(treedef, var_type, leaves)

  def to_lojax(self, *leaves, treedef, var_type, has_qdd, ref):
    return _from_leaves(treedef, var_type, leaves)

  def jvp(_, primals, tangents, *, treedef, var_type, has_qdd, ref):
    _no_derivative('the creation of', 'new_variable')

  def transpose(_, out_var, *input_leaves, treedef, var_type, has_qdd, ref):
    _no_derivative('the creation of', 'new_variable')


class GetVariable(hjx.HiPrimitive):
  """Reads the leaves of the plain Variable a hijax Variable holds."""

  multiple_results = True

  def abstract_eval(self, abstract_var, *, treedef, avals, var_type, has_qdd):
    return list(avals), {variable_effect}

  def impl(self, hijax_var, *, treedef, avals, var_type, has_qdd):
    return jax.tree.leaves(_plain_of(hijax_var))

  def to_lojax(_, hijax_var, *, treedef, avals, var_type, has_qdd):
    return jax.tree.leaves(_plain_of(hijax_var))

  def jvp(_, primals, tangents, *, treedef, avals, var_type, has_qdd):
    _no_derivative('with respect to', 'get_variable')

  def transpose(_, out, hijax_var, *, treedef, avals, var_type, has_qdd):
    _no_derivative('with respect to', 'get_variable')


class SetVariable(hjx.HiPrimitive):
  """Replaces the content of a hijax Variable by the leaves of a plain
  Variable (possibly of other shapes, dtypes or metadata)."""

  multiple_results = True

  def is_high(_, *leaf_avals, treedef, var_type) -> bool:
    return True

  def abstract_eval(
    _, aval_mutable_qdd: core.AvalMutableQDD, *leaf_avals, treedef, var_type
  ):
    new = VariableQDD(tuple(leaf_avals), treedef, var_type)
    aval_mutable_qdd.mutable_qdd.update(new)
    return [], {variable_effect}

  def impl(_, hijax_var, *leaves, treedef, var_type):
    _store(hijax_var, jax.tree.unflatten(treedef, leaves))
    return []

  def to_lojax(_, hijax_var, *leaves, treedef, var_type):
    _store(hijax_var, jax.tree.unflatten(treedef, leaves))
    return []

  def jvp(_, primals, tangents, *, treedef, var_type):
    _no_derivative('an update of', None)

  def transpose(_, *args, treedef, var_type):
    _no_derivative('an update of', None)


new_variable_p = NewVariable('new_variable')
get_variable_p = GetVariable('get_variable')
set_variable_p = SetVariable('set_variable')


# Run once, at the first hijax Variable: floors above this one register
# what they must do then (pytreelib counts traced hijax Variables as data).
FIRST_HIJAX_HOOKS: list[tp.Callable[[], None]] = []


# -- the Python class ---------------------------------------------------------------

# Every hijax class: ``HijaxVariable`` (for the Variable base) and one
# subclass per Variable type, made on first use.
_HIJAX_CLASSES: set = set()
_HIJAX_OF: dict = {}


def _typeof(hv) -> AbstractVariable:
  var_type = _type_of(hv)
  meta = hv._var_metadata
  ref = bool(meta.get('ref', False))
  if not ref:
    return AbstractVariable(var_type, None, None, True, ref=False)
  q = _qdd_of(hv)
  return AbstractVariable(var_type, q.treedef, q.leaf_avals, False, ref=ref)


class HijaxVariableMeta(VariableMeta):
  """Metaclass of :class:`HijaxVariable`: its classes are JAX types (not
  pytrees), calling one creates a hijax Variable (through
  ``new_variable_p``), and ``isinstance`` also accepts a traced one."""

  def __new__(mcs, cls_name, bases, attrs, **kwargs):
    # Not VariableMeta.__new__: a hijax Variable is a JAX value, not a
    # pytree node.
    cls = type.__new__(mcs, cls_name, bases, attrs, **kwargs)
    hjx.register_hitype(cls, _typeof)
    _HIJAX_CLASSES.add(cls)
    return cls

  def __call__(cls, *args, **kwargs):
    kwargs.pop('hijax', None)
    return new_variable(cls._var_type, *args, **kwargs)

  def __instancecheck__(cls, instance):
    if type.__instancecheck__(cls, instance):
      return True
    if type(instance) is HijaxVariable:
      return issubclass(_type_of(instance), cls._var_type)
    if isinstance(instance, core.Tracer):
      aval = instance.aval
      return type(aval) is AbstractVariable and issubclass(
        aval.var_type, cls._var_type
      )
    return False


def _tracer_instancecheck(cls, instance):
  if type.__instancecheck__(cls, instance):
    return True
  if type(instance) is HijaxVariable:
    return issubclass(_type_of(instance), cls)
  if isinstance(instance, core.Tracer):
    aval = instance.aval
    return type(aval) is AbstractVariable and issubclass(aval.var_type, cls)
  return False


def _install_tracer_instancecheck() -> None:
  """Lets ``isinstance(x, nnx.Param)`` accept a hijax Param (traced or
  not), and a
  Pytree attribute holding one be data. Done on the first hijax Variable
  only, so that programs without any keep the C-level ``isinstance`` of
  Variable types and data checks."""
  if (
    VariableMeta.__dict__.get('__instancecheck__') is not _tracer_instancecheck
  ):
    VariableMeta.__instancecheck__ = _tracer_instancecheck
    for hook in FIRST_HIJAX_HOOKS:
      hook()


def _reading(name):
  def method(hijax_var, *args, **kwargs):
    return getattr(_read(hijax_var), name)(*args, **kwargs)

  method.__name__ = name
  return method


def _writing(name):
  def method(hijax_var, *args, **kwargs):
    plain = _read(hijax_var)
    out = getattr(plain, name)(*args, **kwargs)
    _write(hijax_var, plain)
    return out

  method.__name__ = name
  return method


def _new_copy(name):
  def method(hijax_var, *args, **kwargs):
    out = getattr(_read(hijax_var), name)(*args, **kwargs)
    if _is_hijax_value(out):
      return out  # (the plain method made it hijax already)
    return _new(out)

  method.__name__ = name
  return method


class HijaxVariable(Variable[A], metaclass=HijaxVariableMeta):
  """A Variable that is a first-class JAX value.

  ``nnx.Param(x, hijax=True)`` (or any Variable type, or every new Variable
  under ``nnx.var_defaults(hijax=True)``) returns a :class:`HijaxVariable`.
  JAX sees it as one value of type :class:`AbstractVariable` (a mutable
  "hijax" type), so it can be passed straight to ``jax.jit`` and the other JAX
  transforms, or closed over by them, and updated in place inside: the update
  is visible outside.

  >>> import jax, jax.numpy as jnp
  >>> from flax import nnx
  >>> v = nnx.Param(jnp.ones(3), hijax=True)
  >>> type(v).__name__, isinstance(v, nnx.Param), v.hijax
  ('HijaxVariable', True, True)
  >>> @jax.jit
  ... def f(v):
  ...   v[...] = v[...] + 1
  ...   return v[...] * 2
  >>> f(v).tolist(), v[...].tolist()
  ([4.0, 4.0, 4.0], [2.0, 2.0, 2.0])

  How it works. A hijax Variable keeps its value and metadata in the slots
  every Variable has. Every read goes through the primitive
  ``get_variable_p`` and every write through ``set_variable_p`` (creation
  through ``new_variable_p``): outside a transform they act on the object at
  once; under a trace they are recorded, with the Variable's current content
  (its leaves' types and the pytree structure of the plain Variable it stands
  for) tracked by JAX as quasi-dynamic data (:class:`VariableQDD`). A read
  rebuilds a plain Variable of the same type from the leaves, runs the plain
  Variable method on it, and a write flattens it back.

  ``type(v)`` is ``HijaxVariable`` whatever the Variable type it stands
  for: ``v.var_type`` (or ``v.type``); ``isinstance(v, nnx.Param)`` holds
  for a hijax ``Param``. (GraphDefs record a subclass per Variable type,
  :func:`hijax_class`, which rebuilds a hijax Variable of that type.)

  >>> import jax.numpy as jnp
  >>> from flax import nnx
  >>> v = nnx.BatchStat(jnp.zeros(2), hijax=True)
  >>> v.var_type.__name__, v.get_metadata('hijax')
  ('BatchStat', True)
  """

  __slots__ = ('_hijax_type',)
  _var_type: tp.ClassVar[type] = Variable

  def __init__(hijax_var, *args, **kwargs):
    """Re-initialises the content from a plain Variable of its type."""
    plain = type.__call__(_type_of(hijax_var), *args, **kwargs)
    plain._var_metadata['hijax'] = True
    _write(hijax_var, plain)

  __getitem__ = _reading('__getitem__')
  __setitem__ = _writing('__setitem__')
  __call__ = _reading('__call__')
  __contains__ = _reading('__contains__')
  __len__ = _reading('__len__')
  __iter__ = _reading('__iter__')
  get_value = _reading('get_value')
  set_value = _writing('set_value')
  get_raw_value = _reading('get_raw_value')
  set_raw_value = _writing('set_raw_value')
  create_value = _reading('create_value')

  def get_metadata(hijax_var, *args, **kwargs):
    meta = _read(hijax_var).get_metadata(*args, **kwargs)
    if type(meta) is dict and not args and 'name' not in kwargs:
      meta = dict(sorted(meta.items(), key=lambda kv: str(kv[0])))
    return meta

  has_metadata = _reading('has_metadata')
  set_metadata = _writing('set_metadata')
  del_metadata = _writing('del_metadata')
  add_axis = _writing('add_axis')
  remove_axis = _writing('remove_axis')
  copy = _new_copy('copy')
  replace = _new_copy('replace')
  to_state = _new_copy('to_state')

  def copy_from(self, other: Variable[A] | HijaxVariable[A]) -> None:
    """Takes ``other``'s value and metadata (staying a hijax Variable)."""
    plain = _read(other) if _is_hijax_value(other) else other
    new = _read(self)
    new.copy_from(plain)
    new._var_metadata['hijax'] = True
    _write(self, new)

  def update_from_state(
    self, variable_state: Variable[A] | HijaxVariable[A]
  ) -> None:
    """Takes ``variable_state``'s value and metadata (``nnx.update``)."""
    plain = _read(self)
    if _is_hijax_value(variable_state):
      variable_state = _read(variable_state)
    plain.update_from_state(variable_state)
    plain._var_metadata['hijax'] = True
    _write(self, plain)

  @classmethod
  def from_metadata(cls, value: A, metadata: dict[str, tp.Any]):
    """A hijax Variable of this class's Variable type holding ``value``."""
    metadata = dict(metadata)
    metadata['hijax'] = True
    # (a Variable type's ``from_metadata`` makes it hijax)
    return cls._var_type.from_metadata(value, metadata)

  def cur_qdd(self):
    """What this Variable holds, as JAX tracks it (:class:`VariableQDD`)."""
    return _qdd_of(self)

  def type_state(self):
    """Same as :meth:`cur_qdd`."""
    return _qdd_of(self)

  @property
  def hijax(self) -> bool:
    return True

  @property
  def ref(self) -> bool:
    return bool(_read(self).get_metadata('ref', False))

  @property
  def var_type(self):
    return _type_of(self)

  @property
  def type(self):
    return _type_of(self)

  @property
  def value(self):
    # reading ``.value`` of a hijax Variable is refused outright (as in
    # Flax 0.12.8), not merely deprecated
    raise NotImplementedError(
      'HijaxVariable.value property is not implemented. For Variable[Array] '
      'instances use:\n\n  variable[...]\n\nFor other Variable types use:'
      '\n\n  variable.get_value()\n'
    )

  @value.setter
  def value(self, value):
    warnings.warn(_VALUE_SET, DeprecationWarning, stacklevel=2)
    _writing('set_value')(self, value)

  @property
  def shape(self):
    return _read(self).get_value().shape

  @property
  def metadata(self):
    return self.get_metadata()

  def __getattr__(self, name):
    # As a plain Variable's: metadata, then the value's attributes (NumPy's
    # protocols included), the value's own AttributeError otherwise.
    if name in _OWN or name in _NOT_FORWARDED:
      raise AttributeError(name)
    plain = _read(self)
    meta = plain._var_metadata
    if name in meta:
      return meta[name]
    return getattr(plain.get_value(), name)

  def __setattr__(self, name, value):
    if name in _OWN:
      object.__setattr__(self, name, value)
      return
    plain = _read(self)
    setattr(plain, name, value)
    _write(self, plain)

  def __delattr__(self, name):
    plain = _read(self)
    delattr(plain, name)
    _write(self, plain)

  # A hijax Variable is an object with an identity (as a jax.Ref is):
  # ``==`` compares identities and it is hashable.
  __eq__ = object.__eq__
  __hash__ = object.__hash__

  def __deepcopy__(self, memo):
    plain = _copy.deepcopy(_read(self), memo)
    new = _new(plain)
    memo[id(self)] = new
    return new

  def __copy__(self):
    return self.copy()

  def __reduce__(self):
    return (_rebuild, (_read(self),))


def _rebuild(plain):
  return _new(plain)


_hijax_ops.install(HijaxVariable, AbstractVariable, _read, _values_of)
_HIJAX_OF[Variable] = HijaxVariable


def hijax_class(var_type: type) -> type:
  """The hijax class GraphDefs record for a hijax Variable of the Variable
  type ``var_type`` (a subclass of both :class:`HijaxVariable` and
  ``var_type``, named ``HijaxVariable``; calling it or its
  ``from_metadata`` makes a :class:`HijaxVariable` of ``var_type``)."""
  cls = _HIJAX_OF.get(var_type)
  if cls is None:
    if not (isinstance(var_type, type) and issubclass(var_type, Variable)):
      raise TypeError(f'Expected a Variable type, got {var_type!r}')
    if var_type in _HIJAX_CLASSES:
      return var_type
    cls = HijaxVariableMeta(
      'HijaxVariable',
      (HijaxVariable, var_type),
      {'__slots__': (), '_var_type': var_type, '__module__': __name__},
    )
    cls.__qualname__ = 'HijaxVariable'
    _HIJAX_OF[var_type] = cls
  return cls


def new_variable(var_type: type, *args, mutable: bool | None = None, **kwargs):
  """``var_type(*args, **kwargs)`` as a hijax Variable (what
  ``var_type(..., hijax=True)`` returns)."""
  plain = type.__call__(var_type, *args, **kwargs)
  return from_variable(plain, mutable=mutable)


def from_variable(var: Variable, *, mutable: bool | None = None):
  """A new hijax Variable with ``var``'s value and metadata (``mutable``,
  when given, is recorded in the metadata)."""
  if _is_hijax_value(var):
    plain = _read(var)
  else:
    plain = var.copy(_copy_ref=False)
  meta = {'hijax': True}
  meta.update(plain._var_metadata)
  meta['hijax'] = True
  _METADATA_NAMES.update(k for k in meta if k not in _JAX_NAMES)
  if mutable is not None:
    meta['mutable'] = bool(mutable)
  object.__setattr__(plain, '_var_metadata', meta)
  return _new(plain)


def to_variable(var) -> Variable:
  """A plain Variable with the value and metadata of the hijax ``var``."""
  plain = _read(var)
  meta = plain._var_metadata
  meta.pop('hijax', None)
  meta.pop('mutable', None)
  return plain
