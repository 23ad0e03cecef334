"""Where ``Module.sow`` and ``Module.perturb`` put their values during an
``nnx.capture`` call.

A capture gives every Module reachable from its root (the function when
it is a Module, else its first positional argument) a ``__captures__``
data attribute, as Flax 0.12.8: a tuple of *buffers*, one Variable per
type the capture asks for, then one per other Variable type ``init``
gives that Module values of. A buffer's value is a dict ``{name: value}``
(a buffer of ``init`` starts with those values). ``sow`` and ``perturb``
write into the buffer whose type is exactly theirs (a type without a
buffer is not captured) and leave the Module's other attributes alone.
Being Variables in a data attribute, buffers cross NNX transforms, and
``nnx.state`` / ``nnx.split`` filters see them like any state (a
``Perturbation`` buffer is an ``Intermediate``). Recording checks no
trace level, as in Flax 0.12.8. When the
capture ends it reads and removes the attribute of each of its Modules (a
capture nested in another takes the Modules away from the outer one). A
Module without the attribute keeps the deprecated behaviour of setting
attributes.
"""

from flax.nnx import variablelib
import collections.abc
import typing as tp

import jax
import jax.numpy as jnp

ATTRIBUTE = '__captures__'


def new(var_types: tp.Sequence, init: dict) -> tuple:
  """The buffers of one Module: ``var_types`` (each once, in order) then
  the other types of ``init`` (``{type: {name: value}}``, in its order);
  a buffer starts with the values ``init`` gives its type."""
  types = list(dict.fromkeys(var_types))
  types += [t for t in init if t not in types]
  return tuple(t(dict(init.get(t, {}))) for t in types)


def of(module) -> tuple | None:
  """The buffers of ``module`` if a capture holds it."""
  found = vars(module).get(ATTRIBUTE)
  return found if type(found) is tuple else None


def _buffer(buffers: tuple, variable_type):
  for buffer in buffers:
    if type(buffer) is variable_type:
      return buffer
  return None


def _record(buffer, name, value) -> None:
  # A new dict (transforms see a new value, not one changed in place);
  # no trace-level check, as Flax 0.12.8 records into a buffer made
  # outside the trace the Module runs in.
  recorded = buffer.get_raw_value()
  buffer.set_raw_value({**recorded, name: value}, _unsafe_bypass_check=True)


def sow(buffers, variable_type, name, value, reduce_fn, init_fn) -> bool:
  """Reduces ``value`` into the buffer of ``variable_type``; ``False`` if
  the capture has none."""
  buffer = _buffer(buffers, variable_type)
  if buffer is None:
    return False
  recorded = buffer.get_raw_value()
  start = recorded[name] if name in recorded else init_fn()
  _record(buffer, name, reduce_fn(start, value))
  return True


def perturb(buffers, variable_type, name, value):
  """``value`` plus the perturbation ``name`` of the buffer of
  ``variable_type`` (zeros, recorded on first use); ``value`` itself if
  the capture has no such buffer."""
  buffer = _buffer(buffers, variable_type)
  if buffer is None:
    return value
  recorded = buffer.get_raw_value()
  if name not in recorded:
    _record(buffer, name, jax.tree.map(jnp.zeros_like, value))
  perturbation = buffer.get_raw_value()[name]
  return jax.tree.map(lambda p, v: p + v, perturbation, value)


def init_by_module(state) -> dict:
  """``{module path: {type: {name: value}}}`` of the Variables of a State
  or nested mapping (``init`` of ``nnx.capture``), in its order; other
  values are ignored."""

  out: dict = {}

  def walk(mapping, path):
    for key, v in mapping.items():
      if isinstance(v, variablelib.Variable):
        by_type = out.setdefault(path, {})
        by_type.setdefault(type(v), {})[key] = v.get_value()
      elif isinstance(v, collections.abc.Mapping):
        walk(v, (*path, key))

  if state is not None:
    walk(state, ())
  return out


def records(buffers: tuple, var_types: tp.Sequence) -> tp.Iterator:
  """``(name, Variable)`` for what the buffers of ``var_types`` hold."""
  for buffer in buffers:
    if type(buffer) in var_types:
      for name, value in buffer.get_raw_value().items():
        yield name, type(buffer)(value)
