"""Where ``Module.sow`` and ``Module.perturb`` put their values during an
``nnx.capture`` call.

A capture attaches every Module reachable from its root (the function
when it is a Module, else its first positional argument) to a
:class:`Capture`, with the Module's path from the root (the first path
when it is reachable twice). While attached, ``sow`` and ``perturb``
record into the capture instead of the Module's attributes; a Module that
is not attached keeps the deprecated attribute behaviour. When the capture
ends, its Modules are detached (from every capture: a capture nested in
another takes its Modules away from the outer one).
"""

import dataclasses
import typing as tp

import jax
import jax.numpy as jnp

# id(module) -> (module, capture, path) for the attached Modules
ATTACHED: dict[int, tuple[tp.Any, 'Capture', tuple]] = {}


@dataclasses.dataclass(eq=False)
class Capture:
  """The values recorded by one capture call.

  Attributes:
    var_types: the Variable types asked for, in order; a value goes to the
      first type it is an instance of (and is dropped if none).
    init: ``{path: value}``: starting values (a sow reduces onto them, a
      perturbation takes them instead of zeros).
    stores: one ``{path: Variable}`` per type of ``var_types``.
  """

  var_types: tuple[type, ...]
  init: dict[tuple, tp.Any]
  stores: list[dict[tuple, tp.Any]] = dataclasses.field(init=False)

  def __post_init__(self):
    self.stores = [{} for _ in self.var_types]

  def _slot(self, variable_type) -> dict | None:
    for store, t in zip(self.stores, self.var_types):
      if issubclass(variable_type, t):
        return store
    return None

  def sow(self, path, variable_type, name, value, reduce_fn, init_fn) -> None:
    store = self._slot(variable_type)
    if store is None:
      return
    key = (*path, name)
    previous = store.get(key)
    if previous is not None:
      start = previous.get_value()
    elif key in self.init:
      start = self.init[key]
    else:
      start = init_fn()
    store[key] = variable_type(reduce_fn(start, value))

  def perturb(self, path, variable_type, name, value):
    # active only if a type asked for is this perturbation type (or a
    # subclass of it); the value goes to the first type it is one of
    if not any(issubclass(t, variable_type) for t in self.var_types):
      return value
    store = self._slot(variable_type)
    key = (*path, name)
    var = store.get(key)
    if var is None:
      if key in self.init:
        var = variable_type(self.init[key])
      else:
        var = variable_type(jax.tree.map(jnp.zeros_like, value))
      store[key] = var
    return jax.tree.map(lambda p, v: p + v, var.get_value(), value)


def attached(module):
  """``(capture, path)`` of ``module`` if a capture holds it, else None."""
  entry = ATTACHED.get(id(module))
  if entry is None or entry[0] is not module:
    return None
  return entry[1], entry[2]
