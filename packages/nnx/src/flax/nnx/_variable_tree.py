"""A Variable as a JAX pytree, and the raw storage of its value.

Every Variable type is registered with ``jax.tree_util``: its one leaf is
the stored value, its aux data the type plus metadata (:class:`VarAux`,
hashable so that it can be part of a jit cache key). The raw-storage
helpers here are the one way code outside :mod:`flax.nnx.variablelib`
writes a Variable's slot (graph updates, transforms writing results back).

>>> from flax import nnx
>>> import jax, jax.numpy as jnp
>>> leaves, treedef = jax.tree.flatten(nnx.Param(jnp.ones(2), tag='w'))
>>> len(leaves), jax.tree.unflatten(treedef, leaves).tag
(1, 'w')
"""

import collections
import itertools

import jax

from flax.nnx._common import trace_state

REF_TYPE = jax.Ref


def new_ref(value):
  """``value`` in a fresh mutable ``jax.Ref``."""
  return jax.new_ref(value)


_TRACER = jax.core.Tracer
_ABSTRACT_REF = jax.ref.AbstractRef


def is_ref(x) -> bool:
  """``isinstance(x, jax.Ref)``: a Ref, or a JAX tracer of one.

  Told apart without ``jax.Ref``'s metaclass check, which runs an import
  statement on every call and is slow next to a type check; graph walks
  and attribute writes ask this of every non-array value they meet.
  """
  return type.__instancecheck__(REF_TYPE, x) or (
    isinstance(x, _TRACER) and isinstance(x.aval, _ABSTRACT_REF)
  )


def is_array_ref(x) -> bool:
  """Whether ``x`` is a mutable ``jax.Ref``, or a JAX tracer of one (a Ref
  passed into ``jax.jit``, ``jax.grad``, ...)."""
  return type(x) is REF_TYPE or (
    isinstance(x, _TRACER) and isinstance(x.aval, _ABSTRACT_REF)
  )


class VarAux:
  """Hashable pytree aux data of a Variable: its type and metadata."""

  __slots__ = ('type', 'metadata', '_hash')

  def __init__(self, typ, metadata):
    self.type = typ
    self.metadata = metadata
    self._hash = None

  def __eq__(self, other):
    return (
      type(other) is VarAux
      and self.type is other.type
      and self.metadata == other.metadata
    )

  def __hash__(self):
    h = self._hash
    if h is None:
      try:
        h = hash((self.type, tuple(sorted(self.metadata.items()))))
      except TypeError:
        h = hash((self.type, tuple(sorted(self.metadata))))
      self._hash = h
    return h

  def __repr__(self):
    # As a treedef shows it: ``CustomNode(Param[(('eager_sharding', True),
    # ...)], ...)``, the required entries included.
    meta = {'eager_sharding': True, 'hijax': False, 'ref': False}
    meta.update(self.metadata)
    return repr(tuple(sorted(meta.items(), key=lambda kv: str(kv[0]))))


_EMPTY_AUX: dict = {}  # Variable type -> aux data for empty metadata


def aux_for(t) -> VarAux:
  """The (shared) aux data of a Variable of type ``t`` without metadata."""
  aux = _EMPTY_AUX.get(t)
  if aux is None:
    aux = _EMPTY_AUX[t] = VarAux(t, {})
  return aux


def _aux(var):
  meta = var._var_metadata
  if meta:
    return VarAux(type(var), meta)
  return aux_for(type(var))


def _var_flatten(var):
  meta = var._var_metadata
  if meta:
    return (var._raw_value,), VarAux(type(var), meta)
  # Set on every registered Variable type by ``register``.
  return (var._raw_value,), var._var_empty_aux


_VALUE_KEY = jax.tree_util.GetAttrKey('value')


def _var_flatten_with_keys(var):
  return ((_VALUE_KEY, var._raw_value),), _aux(var)


_new = object.__new__
# Slot setters of Variable, bound by ``bind_slots`` once the class exists;
# they skip ``Variable.__setattr__`` and the attribute lookup of
# ``object.__setattr__``.
_set_raw = _set_meta = _set_trace = None


def _var_unflatten(aux, children):
  # A Variable rebuilt by ``jax.tree.unflatten`` (e.g. an argument of
  # ``jax.jit``) belongs to the trace it is rebuilt in.
  var = _new(aux.type)
  _set_raw(var, children[0])
  meta = aux.metadata
  _set_meta(var, dict(meta) if meta else {})
  _set_trace(var, trace_state())
  return var


def register(cls) -> None:
  """Registers the Variable type ``cls`` as a pytree."""
  cls._var_empty_aux = aux_for(cls)
  jax.tree_util.register_pytree_with_keys(
    cls, _var_flatten_with_keys, _var_unflatten, _var_flatten
  )


def bind_slots(variable_cls) -> None:
  """Binds the slot setters of the base Variable class (called once)."""
  global _set_raw, _set_meta, _set_trace
  _set_raw = variable_cls.__dict__['_raw_value'].__set__
  _set_meta = variable_cls.__dict__['_var_metadata'].__set__
  _set_trace = variable_cls.__dict__['_trace_state'].__set__


def record_trace(var) -> None:
  """Makes ``var`` (a Variable NNX just created without its constructor)
  belong to the current JAX trace: mutating it from another trace is a
  TraceContextError."""
  _set_trace(var, trace_state())


def store_raw_value(var, value) -> None:
  """Puts ``value`` in ``var``'s slot as is: no hooks, no trace check, and a
  ``jax.Ref`` held there is replaced rather than written into.
  """
  object.__setattr__(var, '_raw_value', value)


_consume = collections.deque(maxlen=0).extend
_RAW_VALUE = itertools.repeat('_raw_value')


def store_raw_values(targets, values) -> None:
  """:func:`store_raw_value` for each pair of ``targets`` and ``values``,
  in one C-level pass (no Python frame per Variable)."""
  _consume(map(object.__setattr__, targets, _RAW_VALUE, values))
