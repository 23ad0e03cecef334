"""Hijax Variables: Variables that are first-class JAX values.

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
"""

from __future__ import annotations

import typing as tp
import warnings

import jax
from jax._src import core
from jax._src import hijax as hjx

from flax.nnx import variablelib
from flax.nnx._hijax_qdd import VariableQDD, variable_effect
from flax.nnx.variablelib import Variable, VariableMeta

A = tp.TypeVar('A')
PyTreeDef = tp.Any

# The slot holding a Variable's stored value, and the slots of the object
# itself (never routed through the primitives).
_SLOT = '_raw_value'
_OWN = frozenset({_SLOT, '_var_metadata', '_trace_state', '_hijax_type'})
# ``.value`` is deprecated for every Variable (reading it on a hijax
# Variable is refused).
_VALUE_SET = variablelib._VALUE_SET_DEPRECATED


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
    from flax.nnx import _hijax_graph, pytreelib

    VariableMeta.__instancecheck__ = _tracer_instancecheck
    pytreelib.register_data_type(_hijax_graph.TracedHijaxVariable)


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
  """A Variable that is a first-class JAX value (see the module docstring).

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
    if name in _OWN or name in variablelib._NOT_FORWARDED:
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
    import copy as _copy

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


# (the class is public as ``flax.nnx.variablelib.HijaxVariable``)
HijaxVariable.__module__ = 'flax.nnx.variablelib'

from flax.nnx import _hijax_ops  # noqa: E402

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
