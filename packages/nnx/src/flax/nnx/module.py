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

Views of Modules: copies of the Module graph that share its Variables
but differ in attributes (``nnx.view``, ``nnx.with_attributes``), and
``nnx.capture`` of the intermediates a call sows.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class Noisy(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2))
...     self.deterministic = False
...   def set_view(self, deterministic: bool | None = None):
...     if deterministic is not None:
...       self.deterministic = deterministic
>>> model = Noisy()
>>> eval_model = nnx.view(model, deterministic=True)
>>> eval_model.deterministic, model.deterministic
(True, False)
>>> eval_model.w is model.w
True
"""

from flax.nnx import statelib
import functools
import inspect
from flax.nnx import graphlib
from flax.nnx import variablelib
from flax.nnx import pytreelib
from flax.nnx.pytreelib import Pytree, _new_object, _sort_key
import jax
import jax.numpy as jnp
import typing as tp
import warnings

from flax.nnx import _capture, filterlib
from flax.nnx._common import resolve_graph
from flax.nnx.graphwalk import iter_children as iter_children
from flax.nnx.graphwalk import iter_module_children as iter_module_children
from flax.nnx.graphwalk import iter_graph
from flax.nnx.pytreelib import PytreeMeta
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


# -- views ---------------------------------------------------------------------


def _copy_graph(node, memo, var_fn=None, path=()):
  """Copies the Pytrees of ``node`` (and the plain containers holding
  them); Variables are shared, or replaced by ``var_fn(path, variable)``
  (once per Variable); arrays and other values are shared."""

  if isinstance(node, Pytree):
    new = memo.get(id(node))
    if new is None:
      new = _new_object(type(node), node._pytree__m.data)
      pytreelib.set_state_flags(new, pytreelib.state_flags(node))
      memo[id(node)] = new
      d = vars(new)
      # The copy lists its attributes (and dict entries) sorted by name, as
      # a graph rebuilt from its flat state does.
      for k, v in _sorted_items(vars(node)):
        d[k] = _copy_graph(v, memo, var_fn, (*path, k))
    return new
  if var_fn is not None and isinstance(node, Variable):
    new = memo.get(id(node))
    if new is None:
      new = memo[id(node)] = var_fn(path, node)
    return new
  t = type(node)
  if t is State:  # e.g. the params of nnx.split given to nnx.with_vars
    return State(_copy_graph(node._mapping, memo, var_fn, path), _copy=False)
  if t is list or t is tuple:
    return t(
      _copy_graph(v, memo, var_fn, (*path, i)) for i, v in enumerate(node)
    )
  if t is dict:
    return {
      k: _copy_graph(v, memo, var_fn, (*path, k))
      for k, v in _sorted_items(node)
    }
  return node


def _sorted_items(d: dict) -> list:
  try:
    return sorted(d.items(), key=lambda kv: _sort_key(kv[0]))
  except TypeError:  # keys that do not compare: kept in their order
    return list(d.items())


def _selected(node, only, graph):
  predicate = filterlib.to_predicate(only)
  for path, module in iter_modules(node, graph=graph):
    if predicate(path, module):
      yield path, module


_GraphMode = bool | None


def view(
  node: A,
  /,
  *,
  only: filterlib.Filter = ...,
  raise_if_not_found: bool = True,
  graph: _GraphMode = None,
  **kwargs,
) -> A:
  """A copy of ``node`` whose Modules had ``set_view(**kwargs)`` called.

  Each Module (matching ``only``) that defines ``set_view`` gets the keyword
  arguments its ``set_view`` accepts; the copy shares every Variable with
  ``node``. A keyword that no ``set_view`` accepts raises a ``ValueError``
  unless ``raise_if_not_found=False``. :func:`view_info` lists the
  accepted keywords.
  """
  new = _copy_graph(node, {})
  used = set()
  for _, module in _selected(new, only, graph):
    set_view = getattr(type(module), 'set_view', None)
    if set_view is None:
      continue
    params = inspect.signature(set_view).parameters
    takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
    accepted = {k: v for k, v in kwargs.items() if takes_all or k in params}
    if accepted:
      used.update(accepted)
      module.set_view(**accepted)
  unused = sorted(set(kwargs) - used)
  if unused and raise_if_not_found:
    raise ValueError(
      f'Unused keys found in nnx.view: {unused}. No selected Module has a '
      'set_view method taking them; see nnx.view_info(node).'
    )
  return new


def with_attributes(
  node: A,
  /,
  *,
  only: filterlib.Filter = ...,
  raise_if_not_found: bool = True,
  graph: _GraphMode = None,
  **attributes: tp.Any,
) -> A:
  """A copy of ``node`` (sharing its Variables) with ``attributes`` set on
  the Modules matching ``only`` that have them."""
  new = _copy_graph(node, {})
  remaining = set(attributes)
  for _, module in _selected(new, only, graph):
    for name, value in attributes.items():
      if hasattr(module, name):
        remaining.discard(name)
        setattr(module, name, value)
  if remaining and raise_if_not_found:
    raise ValueError(
      'Could not find at least one instance of the following attributes: '
      f'{sorted(remaining)}. No selected Module has them; check the '
      'spelling, or pass raise_if_not_found=False.'
    )
  return new


def _arg_docs(doc: str) -> dict:
  """``{name: description lines}`` of the ``Args:`` section of a Google
  style docstring."""
  lines = inspect.cleandoc(doc or '').splitlines()
  out: dict = {}
  in_args = False
  current = None
  base = None
  section = 0  # indent of the ``Args:`` line; its entries sit deeper
  for line in lines:
    stripped = line.strip()
    indent = len(line) - len(line.lstrip())
    if not in_args:
      in_args = stripped in ('Args:', 'Arguments:')
      section = indent
      continue
    if not stripped:
      current = None
      continue
    if base is None:
      base = indent
    if indent < base or indent <= section:
      break
    if indent == base and ':' in stripped:
      name, _, rest = stripped.partition(':')
      name = name.split('(')[0].strip()
      current = out.setdefault(name, [])
      if rest.strip():
        current.append(rest.strip())
    elif current is not None:
      current.append(stripped)
  return out


# ``set_view`` parameters view_info leaves out.
_UNLISTED_PARAMETERS = frozenset({'self', 'args', 'kwargs'})


def view_info(
  node: Module, /, *, only: filterlib.Filter = ..., graph: bool | None = None
) -> str:
  """Describes the ``set_view`` keywords of the Module types in ``node``
  (the keywords :func:`view` accepts), one block per type, sorted by
  qualified class name (``make.<locals>.Block`` for a class defined in a
  function). Each keyword shows its annotation and default as ``str``
  does and the lines of its ``Args:`` entry; an undocumented ``set_view``
  shows its signature. Parameters named ``self``, ``args`` or ``kwargs``
  are left out.

  Raises:
    KeyError: (the keyword) when a documented ``set_view`` leaves a
      keyword out of its ``Args:`` section.
  """
  by_type: dict = {}
  for _, module in _selected(node, only, graph):
    set_view = getattr(type(module), 'set_view', None)
    if set_view is not None:
      # Blocks are named (and sorted) by qualified class name, so a class
      # defined in a function reads ``make.<locals>.Block``.
      by_type.setdefault(type(module).__qualname__, set_view)
  blocks = []
  for name in sorted(by_type):
    set_view = by_type[name]
    lines = [f'{name}:']
    if set_view.__doc__ is None:  # undocumented: its signature instead
      lines.append(f'  set_view{inspect.signature(set_view)}')
      blocks.append('\n'.join(lines))
      continue
    docs = _arg_docs(set_view.__doc__)
    for pname, p in inspect.signature(set_view).parameters.items():
      # Parameters are skipped by name, whatever their kind (as Flax
      # 0.12.8): ``*rest`` is a keyword to document, ``args=1`` is not.
      if pname in _UNLISTED_PARAMETERS:
        continue
      if pname not in docs:
        # A documented set_view documents every keyword it takes.
        raise KeyError(pname)
      # Annotations and defaults as ``str`` shows them: ``<class 'bool'>``,
      # ``bool | None``, and ``<class 'inspect._empty'>`` for none.
      text = f'  {pname}: {p.annotation}'
      if p.default is not p.empty:
        text += f' = {p.default}'
      lines.append(text)
      lines.extend(f'    {d}' for d in docs[pname])
    blocks.append('\n'.join(lines))
  return '\n'.join(blocks)


# -- capture ----------------------------------------------------------------------


def _method_output_names(cls) -> list:
  """The methods of ``cls`` (its own, not inherited) whose outputs
  ``method_outputs`` sows: public ones and ``__call__``; static and class
  methods and properties are left alone."""
  names = []
  for name, value in vars(cls).items():
    if name.startswith('_') and name != '__call__':
      continue
    if isinstance(value, (staticmethod, classmethod, property, type)):
      continue
    if callable(value) and hasattr(value, '__get__'):
      names.append(name)
  return names


def _sowing_method(method, name: str, variable_type):
  @functools.wraps(method)
  def sowing(self, *args, **kwargs):
    out = method.__get__(self, type(self))(*args, **kwargs)
    self.sow(variable_type, name, out)
    return out

  return sowing


def _patch_methods(modules, variable_type) -> list:
  """Makes the methods of the classes of ``modules`` sow their outputs;
  returns ``(class, name, original)`` to put back. The classes change for
  the call (their other instances sow too), as in Flax 0.12.8."""
  patched = []
  for cls in dict.fromkeys(type(module) for _, module in modules):
    for name in _method_output_names(cls):
      method = vars(cls)[name]
      patched.append((cls, name, method))
      setattr(cls, name, _sowing_method(method, name, variable_type))
  return patched


def capture(
  fn,
  *var_types,
  init=None,
  method_outputs=None,
):
  """Wraps ``fn`` to return ``(output, *captured)``: one State per type of
  ``var_types`` holding what :meth:`Module.sow` and
  :meth:`Module.perturb` recorded during the call.

  The Modules captured are those reachable from ``fn`` when it is a
  Module (or a method of one), else from its first positional argument;
  paths in the States are relative to it. While the call runs, each of
  them has a ``__captures__`` data attribute: a tuple of one Variable per
  type of ``var_types`` (then one per other type ``init`` gives it values
  of), whose value is a dict of what was recorded under each name. A
  ``sow`` / ``perturb`` records into the Variable of exactly its type
  (none: not recorded) and leaves the Module's other attributes alone.
  ``init`` is a State of starting values: a ``sow`` reduces onto them, a
  ``perturb`` adds them instead of zeros (even when ``var_types`` leaves
  their type out), which is how gradients w.r.t. perturbations are taken.
  The records of ``var_types`` are returned, each in the State of the
  first type it is an instance of. ``method_outputs=SomeVariableType``
  also sows the output of every public method (and ``__call__``) that the
  classes of the captured Modules define, under the method's name: the
  classes are changed for the call. Without ``var_types`` the call
  returns only the output. With a Variable type as first argument,
  ``capture`` returns a decorator.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class Model(nnx.Module):
  ...   def __call__(self, x):
  ...     self.sow(nnx.Intermediate, 'h', x * 2)
  ...     return x + 1
  >>> y, inter = nnx.capture(Model(), nnx.Intermediate)(jnp.ones(1))
  >>> inter['h'].get_value()
  (Array([2.], dtype=float32),)
  """

  if isinstance(fn, type) and issubclass(fn, variablelib.Variable):
    types = (fn, *var_types)
    return lambda f: capture(
      f, *types, init=init, method_outputs=method_outputs
    )

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    if isinstance(fn, Pytree):
      root = fn
    elif isinstance(getattr(fn, '__self__', None), Pytree):
      root = fn.__self__  # a method of a Module: that Module
    elif args:
      root = args[0]
    else:
      root = None
    init_values = _capture.init_by_module(init)
    modules = _modules_of(root)
    for path, module in modules:
      buffers = _capture.new(var_types, init_values.get(path, {}))
      setattr(module, _capture.ATTRIBUTE, pytreelib.data(buffers))
    patched = []
    try:
      if method_outputs is not None:
        patched = _patch_methods(modules, method_outputs)
      out = fn(*args, **kwargs)
    finally:
      for cls, name, method in reversed(patched):
        setattr(cls, name, method)
    # As Flax 0.12.8, a call that raises leaves the buffers in place.
    stores = [{} for _ in var_types]
    for path, module in modules:
      buffers = _capture.of(module)
      if buffers is None:  # a nested capture took it
        continue
      delattr(module, _capture.ATTRIBUTE)
      for name, var in _capture.records(buffers, var_types):
        # a record goes to the first type it is an instance of
        k = next(k for k, t in enumerate(var_types) if isinstance(var, t))
        stores[k][(*path, name)] = var
    if not var_types:
      return out
    return (out, *map(_state_of, stores))

  return wrapper


def _modules_of(root) -> list:
  """``(path, module)`` for every Module reachable from ``root`` (its first
  path when reachable twice)."""
  if root is None:
    return []

  # iter_graph yields each object once, under the first path it meets
  return [
    (tuple(path), node)
    for path, node in graphlib.iter_graph(root, graph=True)
    if isinstance(node, Module)
  ]


def _state_of(store: dict):

  paths = sorted(store, key=lambda path: tuple(map(_sort_key, path)))
  return statelib.State._from_flat(paths, [store[p] for p in paths])
