"""NNX graph functions on hijax Variables, also inside plain JAX transforms.

Inside ``jax.jit`` (or ``jax.eval_shape``, ...) a hijax Variable passed in
is a tracer. ``nnx.state`` / ``nnx.split`` keep the tracer itself as the
leaf (a GraphDef records the same class and metadata as for the hijax
Variable it traces), ``nnx.merge`` reuses it and ``nnx.update`` writes
through it (``set_variable_p``), so the update is visible after the call.

>>> import jax, jax.numpy as jnp
>>> from flax import nnx
>>> class M(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2), hijax=True)
>>> m = M()
>>> @jax.jit
... def f(m):
...   state = nnx.state(m)
...   nnx.update(m, jax.tree.map(lambda x: x[...] * 3, state))
...   return state['w'] is m.w
>>> bool(f(m)), m.w[...].tolist()
(True, [3.0, 3.0])
"""

from jax._src import core

from flax.nnx._common import META_EPOCH
from flax.nnx.variablelib import Variable, store_raw_value

# (after variablelib, which loads it at its end)
from flax.nnx.variablelib import (
  _HIJAX_CLASSES,
  AbstractVariable,
  _is_hijax_value,
  _read,
  _write,
  hijax_class,
)

# Every hijax class (one per Variable type).
HIJAX_CLASSES = _HIJAX_CLASSES


class _TracedMeta(type):
  def __instancecheck__(cls, instance):
    return isinstance(instance, core.Tracer) and (
      type(instance.aval) is AbstractVariable
    )


class TracedHijaxVariable(metaclass=_TracedMeta):
  """``isinstance(x, TracedHijaxVariable)``: whether ``x`` is a traced
  hijax Variable (the value a hijax Variable is inside ``jax.jit``). Once
  a hijax Variable exists, it is a data type of Pytrees (a Module
  attribute holding one is data)."""


def is_hijax(x) -> bool:
  """Whether ``x`` is a hijax Variable or a traced one."""
  return _is_hijax_value(x)


def traced_variable_def(tracer) -> tuple[type, dict]:
  """The class and metadata a GraphDef records for the traced hijax
  Variable ``tracer`` (the same as for the hijax Variable it traces)."""
  plain = _read(tracer)
  return hijax_class(type(plain)), plain._var_metadata


def write_hijax(hijax_var, leaf) -> None:
  """What ``nnx.update`` does to the hijax Variable ``hijax_var`` (or its
  tracer): it takes the value and metadata of ``leaf`` (a Variable) or the
  value ``leaf``, through ``set_variable_p`` under a trace."""
  plain = _read(hijax_var)
  before = dict(plain._var_metadata)
  if isinstance(leaf, Variable):
    plain.update_from_state(_read(leaf) if _is_hijax_value(leaf) else leaf)
    plain._var_metadata['hijax'] = True
  else:
    store_raw_value(plain, leaf)
  if plain._var_metadata != before:
    META_EPOCH.value += 1  # cached flat views record the metadata
  _write(hijax_var, plain)
