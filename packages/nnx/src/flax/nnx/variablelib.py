"""NNX Variables: mutable containers of the state of a Module.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> w = nnx.Param(jnp.ones((2, 3)))
>>> w[...] = w * 2
>>> float(w[...].sum())
12.0
"""

import copy as _copy
import dataclasses
import importlib
import typing as tp
import warnings

import jax

from flax import config as config
from flax.nnx import _vardefaults, _variable_tree, reprlib, visualization
from flax.nnx._vardefaults import VARIABLE_CONTEXT as VARIABLE_CONTEXT
from flax.nnx._vardefaults import VarDefaults as VarDefaults
from flax.nnx._vardefaults import VarDefaultsContext as VarDefaultsContext
from flax.nnx._vardefaults import VariableContext as VariableContext
from flax.nnx._vardefaults import use_eager_sharding as use_eager_sharding
from flax.nnx._vardefaults import using_eager_sharding as using_eager_sharding
from flax.nnx._vardefaults import var_defaults as var_defaults
from flax.nnx._variable_names import (
  register_variable_name as register_variable_name,
  variable_name_from_type as variable_name_from_type,
  variable_type_from_name as variable_type_from_name,
)
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
  from flax.nnx import _hijax

  plain._var_metadata['hijax'] = False
  return _hijax.from_variable(plain)


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
      from flax.nnx import _hijax

      return _hijax.new_variable(cls, *args, **kwargs)
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
from flax.nnx._variable_ops import install_array_behaviour  # noqa: E402

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


from flax.nnx._variable_meta import with_metadata as with_metadata  # noqa: E402,I001


# Linen collection names of the built-in Variable types.
register_variable_name('params', Param)
register_variable_name('batch_stats', BatchStat)
register_variable_name('cache', Cache)
register_variable_name('intermediates', Intermediate)
register_variable_name('perturbations', Perturbation)


# Flax 0.12 merged VariableState into Variable; the old name stays an alias.
VariableState = Variable


# Hijax Variables (``nnx.Param(x, hijax=True)``): Variables that are JAX
# values, in their own module.
from flax.nnx._hijax import (  # noqa: E402
  AbstractVariable as AbstractVariable,
  GetVariable as GetVariable,
  HijaxVariable as HijaxVariable,
  HijaxVariableMeta as HijaxVariableMeta,
  NewVariable as NewVariable,
  SetVariable as SetVariable,
  get_variable_p as get_variable_p,
  new_variable_p as new_variable_p,
  set_variable_p as set_variable_p,
)
from flax.nnx._hijax_qdd import (  # noqa: E402
  VariableEffect as VariableEffect,
  VariableQDD as VariableQDD,
  variable_effect as variable_effect,
)
