"""nnx.Module: the base class of neural-network layers and models.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class Scale(nnx.Module):
...   def __init__(self):
...     self.s = nnx.Param(jnp.array(2.0))
...   def __call__(self, x):
...     return x * self.s
>>> float(Scale()(3.0))
6.0
"""

from flax.nnx import statelib
import jax
import jax.numpy as jnp
import typing as tp
import warnings

from flax.nnx import _capture, filterlib
from flax.nnx._common import resolve_graph
from flax.nnx.graphwalk import iter_children as iter_children
from flax.nnx.graphwalk import iter_graph
from flax.nnx.pytreelib import Pytree, PytreeMeta
from flax.nnx.statelib import State as State
from flax.nnx.variablelib import (
  Perturbation,
  Variable,
  variable_type_from_name,
)

A = tp.TypeVar('A')
PathParts = tuple


@tp.runtime_checkable
class Key(tp.Hashable, tp.Protocol):
  """A key of a graph node's child: an attribute name or an index."""

  def __lt__(self, value: tp.Any, /) -> bool: ...


def tuple_reduce(xs, x):
  """The default ``reduce_fn`` of :meth:`Module.sow`: appends to a tuple."""
  return (*xs, x)


def tuple_init():
  """The default ``init_fn`` of :meth:`Module.sow`: an empty tuple."""
  return ()


_append = tuple_reduce
_empty = tuple_init
# ``sow`` / ``perturb`` on a Module no ``nnx.capture`` holds (see
# :mod:`._capture`) set attributes: deprecated, as in Flax 0.12.8.
_SOW_OUTSIDE_CAPTURE = (
  "Using 'Module.sow()' outside of 'nnx.capture()' is deprecated; wrap the "
  'call in nnx.capture(fn, nnx.Intermediate) to collect the sown values.'
)
_PERTURB_OUTSIDE_CAPTURE = (
  "Using 'Module.perturb()' outside of 'nnx.capture()' is deprecated; wrap "
  'the call in nnx.capture(fn, nnx.Perturbation) to collect the '
  'perturbations.'
)


class ModuleMeta(PytreeMeta):
  """Metaclass of Module."""


class Module(Pytree, metaclass=ModuleMeta):
  """Base class for all neural network modules.

  Layers and models subclass it and assign submodules and Variables as
  attributes in ``__init__``; any method (commonly ``__call__``) defines the
  computation.
  """

  def sow(
    self,
    variable_type,
    name: str,
    value,
    reduce_fn: tp.Callable = _append,
    init_fn: tp.Callable = _empty,
  ) -> bool:
    """Stores ``value`` in a Variable attribute ``name`` of ``variable_type``.

    The first call stores ``reduce_fn(init_fn(), value)``; later calls store
    ``reduce_fn(previous, value)`` (by default a growing tuple). During an
    :func:`nnx.capture <flax.nnx.capture>` call that holds this Module the
    value goes to the capture's Variable of exactly ``variable_type`` and
    the Module is left as it is; it returns ``False`` when the capture has
    none. Elsewhere it warns (deprecated, as in Flax 0.12.8).
    """
    if isinstance(variable_type, str):
      variable_type = variable_type_from_name(
        variable_type, allow_register=True
      )
    buffers = _capture.of(self)
    if buffers is not None:
      return _capture.sow(
        buffers, variable_type, name, value, reduce_fn, init_fn
      )
    # Any attribute of the name counts (a method or class attribute too:
    # e.g. '__call__' sown by a capture's method_outputs into a Module it
    # does not hold), checked before the deprecation warning.
    var = getattr(self, name, None) if hasattr(self, name) else None
    if hasattr(self, name):
      if not isinstance(var, Variable):
        raise ValueError(
          f"Expected '{name}' to be a Variable, got {type(var).__name__}: "
          f'{type(self).__name__} has an attribute of that name that is not '
          'a Variable.'
        )
      if not isinstance(var, variable_type):
        raise ValueError(
          f"Expected '{name}' to be of type '{variable_type.__name__}', got "
          f"'{type(var).__name__}'. Use another name, or the same Variable "
          'type for every sow of this name.'
        )
    warnings.warn(_SOW_OUTSIDE_CAPTURE, DeprecationWarning, stacklevel=2)
    if var is not None:
      var.set_value(reduce_fn(var.get_value(), value))
    else:
      setattr(self, name, variable_type(reduce_fn(init_fn(), value)))
    return True

  def perturb(self, name: str, value, variable_type=Perturbation):
    """Adds a zero-valued Variable ``name`` to ``value`` (created on the
    first call) so that gradients w.r.t. it are those of ``value``.

    During an :func:`nnx.capture <flax.nnx.capture>` call that holds this
    Module and has a Variable of exactly ``variable_type`` (it asks for it,
    or its ``init`` gives values of it), the perturbation (zeros, or the
    value ``init`` gives) is recorded there and the Module is left as it
    is; a capture without one leaves ``value`` as is.
    Elsewhere it warns (deprecated, as in Flax 0.12.8)."""
    if isinstance(variable_type, str):
      variable_type = variable_type_from_name(
        variable_type, allow_register=True
      )
    buffers = _capture.of(self)
    if buffers is not None:
      return _capture.perturb(buffers, variable_type, name, value)
    warnings.warn(_PERTURB_OUTSIDE_CAPTURE, DeprecationWarning, stacklevel=2)
    if name not in vars(self):
      setattr(self, name, variable_type(jax.tree.map(jnp.zeros_like, value)))
    var = vars(self)[name]
    if not isinstance(var, variable_type):
      raise ValueError(
        f"Attribute '{name}' of {type(self).__name__} holds a "
        f'{type(var).__name__}, not a {variable_type.__name__}; pick '
        'another name for the perturbation.'
      )
    return var[...] + value

  def iter_modules(self) -> tp.Iterator[tuple[tuple, 'Module']]:
    """Yields ``(path, module)`` for every nested Module including this one,
    children first, attribute names sorted (deprecated: use
    :func:`nnx.iter_modules <flax.nnx.iter_modules>`)."""
    warnings.warn(
      "The 'm.iter_modules()' method is deprecated; call the function "
      "'nnx.iter_modules(m)' instead.",
      DeprecationWarning,
      stacklevel=2,
    )
    return iter_modules(self)

  def iter_children(self) -> tp.Iterator[tuple[str, 'Module']]:
    """Yields ``(name, child)`` for the direct child graph nodes, sorted
    (deprecated: use :func:`nnx.iter_children <flax.nnx.iter_children>`)."""
    warnings.warn(
      "The 'm.iter_children()' method is deprecated; call the function "
      "'nnx.iter_children(m)' instead.",
      DeprecationWarning,
      stacklevel=2,
    )
    return iter_children(self)

  def set_attributes(
    self,
    *filters,
    raise_if_not_found: bool = True,
    graph: bool | None = None,
    **attributes,
  ) -> None:
    """Sets ``attributes`` on this and the nested Modules that match the
    filters and have them."""
    set_attributes(
      self,
      *filters,
      raise_if_not_found=raise_if_not_found,
      graph=graph,
      **attributes,
    )

  def train(self, **attributes) -> None:
    """Training mode: ``deterministic=False, use_running_average=False``."""
    return self.set_attributes(
      deterministic=False,
      use_running_average=False,
      **attributes,
      raise_if_not_found=False,
    )

  def eval(self, **attributes) -> None:
    """Evaluation mode: ``deterministic=True, use_running_average=True``."""
    return self.set_attributes(
      deterministic=True,
      use_running_average=True,
      **attributes,
      raise_if_not_found=False,
    )


def iter_modules(
  module, /, *, graph: bool | None = None
) -> tp.Iterator[tuple[PathParts, Module]]:
  """Yields ``(path, module)`` for every Module reachable from ``module``
  (through Pytree attributes and the lists, tuples and dicts they hold, at
  any depth), children first, keys sorted, each Module once. With
  ``graph=False`` the walk is :func:`nnx.iter_graph`'s tree mode (shared
  references are an error)."""
  for path, node in iter_graph(module, graph=resolve_graph(graph)):
    if isinstance(node, Module):
      yield path, node


def iter_module_children(
  node, /, *, graph: bool | None = None
) -> tp.Iterator[tuple[Key, tp.Any]]:
  """:func:`iter_children` without the Variables: the direct children that
  are Modules or other Pytrees."""
  for key, value in iter_children(node, graph=graph):
    if isinstance(value, Pytree):
      yield key, value


def set_attributes(
  node,
  *filters,
  raise_if_not_found=True,
  graph: bool | None = None,
  **attributes,
):
  """Sets attributes on the nested Modules of ``node`` that match
  ``filters`` (all Modules if none) and already have them."""
  remaining = set(attributes)
  predicates = tuple(map(filterlib.to_predicate, filters or (True,)))
  for path, module in iter_modules(node, graph=graph):
    for predicate in predicates:
      if predicate(path, module):
        for name, value in attributes.items():
          if hasattr(module, name):
            remaining.discard(name)
            setattr(module, name, value)
        break
  if remaining and raise_if_not_found:
    raise ValueError(
      'Could not find at least one instance of the following attributes: '
      f'{sorted(remaining)}. The selected Modules '
      f'(filters: {filters or "all"}) have no attribute of that name; check '
      'the spelling, or pass raise_if_not_found=False.'
    )


def first_from(*args, error_msg: str):
  """Returns the first argument that is not None, else raises."""
  for arg in args:
    if arg is not None:
      return arg
  raise ValueError(error_msg)


def _is_variable(x):
  return isinstance(x, Variable)


def __getattr__(name):
  if name == 'split_state':
    return statelib.split_state
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


from flax.nnx.views import capture as capture  # noqa: E402
from flax.nnx.views import view as view  # noqa: E402
from flax.nnx.views import view_info as view_info  # noqa: E402
from flax.nnx.views import with_attributes as with_attributes  # noqa: E402
