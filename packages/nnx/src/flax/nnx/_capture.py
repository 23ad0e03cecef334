"""Where ``Module.sow`` and ``Module.perturb`` put their values during an
``nnx.capture`` call.

A capture gives every Module reachable from its root (the function when
it is a Module, else its first positional argument) a ``__captures__``
attribute: a :class:`Captures` Variable holding the values recorded for
that Module. While it is there, ``sow`` and ``perturb`` record into it and
leave the Module's other attributes alone; being a Variable, it crosses
NNX transforms like any state (values recorded inside ``nnx.jit`` come
out as its graph updates). When the capture ends it reads and removes the
attribute of each of its Modules (a capture nested in another takes the
Modules away from the outer one). A Module without the attribute keeps
the deprecated behaviour of setting attributes.
"""

import jax
import jax.numpy as jnp

from flax.nnx.variablelib import Variable

ATTRIBUTE = '__captures__'


class Captures(Variable):
  """The values an ``nnx.capture`` call recorded for one Module.

  Its value is a dict: ``'init'`` (``{name: value}``, the starting values
  ``init`` gives this Module) and ``'records'`` (one ``{name: Variable}``
  per Variable type asked for). The types are its ``var_types`` metadata:
  a value goes to the first type it is an instance of, and is dropped if
  none.
  """


def new(var_types, init: dict) -> Captures:
  return Captures(
    {'init': init, 'records': tuple({} for _ in var_types)},
    var_types=tuple(var_types),
  )


def of(module) -> Captures | None:
  """The :class:`Captures` of ``module`` if a capture holds it."""
  found = vars(module).get(ATTRIBUTE)
  return found if isinstance(found, Captures) else None


def _slot(var_types, variable_type) -> int | None:
  for k, t in enumerate(var_types):
    if issubclass(variable_type, t):
      return k
  return None


def _record(captures: Captures, k: int, name: str, var) -> None:
  value = captures.get_raw_value()
  records = list(value['records'])
  records[k] = {**records[k], name: var}
  captures.set_raw_value({'init': value['init'], 'records': tuple(records)})


def sow(captures: Captures, variable_type, name, value, reduce_fn, init_fn):
  k = _slot(captures.var_types, variable_type)
  if k is None:
    return
  recorded = captures.get_raw_value()
  previous = recorded['records'][k].get(name)
  if previous is not None:
    start = previous.get_value()
  elif name in recorded['init']:
    start = recorded['init'][name]
  else:
    start = init_fn()
  _record(captures, k, name, variable_type(reduce_fn(start, value)))


def perturb(captures: Captures, variable_type, name, value):
  # active only if a type asked for is this perturbation type (or a
  # subclass of it); the value goes to the first type it is one of
  var_types = captures.var_types
  if not any(issubclass(t, variable_type) for t in var_types):
    return value
  k = _slot(var_types, variable_type)
  recorded = captures.get_raw_value()
  var = recorded['records'][k].get(name)
  if var is None:
    if name in recorded['init']:
      var = variable_type(recorded['init'][name])
    else:
      var = variable_type(jax.tree.map(jnp.zeros_like, value))
    _record(captures, k, name, var)
  return jax.tree.map(lambda p, v: p + v, var.get_value(), value)
