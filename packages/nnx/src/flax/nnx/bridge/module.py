"""Bridge Modules: NNX Modules written in the Linen style.

A :class:`Module` subclass declares its variables where they are used, in a
method decorated with :func:`compact` (or in ``setup``), with
:meth:`Module.param` and :meth:`Module.variable`, and creates submodules
inline; submodules get Linen's automatic names (``Dense_0``, ...). It is run
like a Linen Module, with :meth:`Module.init` and :meth:`Module.apply` on
Linen-style variable dicts, while the variables live in NNX Variables.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> from flax.nnx import bridge
>>> class Dense(bridge.Module):
...   def __init__(self, dout):
...     self.dout = dout
...   @bridge.compact
...   def __call__(self, x):
...     w = self.param(
...       'w', nnx.initializers.lecun_normal(), (x.shape[-1], self.dout)
...     )
...     return x @ w
>>> class MLP(bridge.Module):
...   @bridge.compact
...   def __call__(self, x):
...     return Dense(2, name='out')(Dense(3)(x))
>>> variables = MLP().init(0, jnp.ones((1, 4)))
>>> {k: v['w'].shape for k, v in variables['params'].items()}
{'Dense_0': (4, 3), 'out': (3, 2)}
>>> MLP().apply(variables, jnp.ones((1, 4))).shape
(1, 2)
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import functools
import inspect
import threading
import typing as tp
from collections.abc import Mapping

import jax
from flax.core import FrozenDict as FrozenDict
from flax.nnx import graphlib
from flax.nnx import module as nnx_module
from flax.nnx.bridge import variables as bv
from flax.nnx.filterlib import Not
from flax.nnx.pytreelib import Pytree as Pytree
from flax.nnx.pytreelib import check_pytree, data
from flax.nnx.pytreelib import set_initializing, set_is_setup
from flax.nnx.pytreelib import register_data_type as register_data_type
from flax.nnx.rnglib import Rngs, RngState
from flax.nnx.statelib import State
from flax.nnx.variablelib import Variable, variable_type_from_name

A = tp.TypeVar('A')
M = tp.TypeVar('M', bound='Module')
F = tp.TypeVar('F', bound=tp.Callable[..., tp.Any])


class AttrPriority(enum.IntEnum):
  """Order of a Module's attributes in its Linen-style variables (lower
  first; equal priorities are ordered by name)."""

  HIGH = 0
  INIT_PARENT = 20
  DEFAULT = 50
  LOW = 100


@dataclasses.dataclass
class ModuleStackEntry:
  """One Module method running: the Module, whether the method is
  :func:`compact`, and how many submodules of each type it has named."""

  module: Module
  in_compact: bool
  type_counter: collections.defaultdict[type, int] = dataclasses.field(
    default_factory=lambda: collections.defaultdict(int)
  )


@dataclasses.dataclass
class ModuleContext(threading.local):
  """Per-thread stack of the bridge Module methods that are running."""

  module_stack: list[ModuleStackEntry | None] = dataclasses.field(
    default_factory=lambda: [None]
  )


MODULE_CONTEXT = ModuleContext()


class _RunState(threading.local):
  def __init__(self):
    self.initializing = False
    self.setup_done: set[int] = set()


_RUN = _RunState()


# -- lazy initialization (bridge.lazy_init, a bridge Module's init) ----------


class _Context(threading.local):
  def __init__(self):
    self.initializing = False
    self.linen_modules: list[tp.Any] = []  # Linen Modules


_CONTEXT = _Context()


@contextlib.contextmanager
def _initializing():
  previous = _CONTEXT.initializing
  _CONTEXT.initializing = True
  try:
    yield
  finally:
    _CONTEXT.initializing = previous


def _set_initializing(root, value: bool) -> None:
  """Marks every Pytree of the graph of ``root`` as being initialized or
  not."""
  for _, node in graphlib.iter_graph(root, graph=True):
    if isinstance(node, Pytree):
      set_initializing(node, value)


def current_context() -> ModuleStackEntry | None:
  """The innermost running bridge Module method, or None."""
  return MODULE_CONTEXT.module_stack[-1]


def current_module() -> Module | None:
  """The bridge Module whose method is running, or None."""
  entry = current_context()
  return None if entry is None else entry.module


@contextlib.contextmanager
def _entered(module, in_compact: bool):
  MODULE_CONTEXT.module_stack.append(ModuleStackEntry(module, in_compact))
  try:
    yield
  finally:
    MODULE_CONTEXT.module_stack.pop()


class ModuleState(State):
  """The State of a bridge Module (an ``nnx.State``)."""


class Scope(Pytree):
  """What a bridge Module runs with: its Rngs and the Linen collections it
  may create variables in (``mutable``, a Linen collection filter)."""

  def __init__(self, rngs: Rngs, mutable: tp.Any):
    self.rngs = rngs
    self.mutable = mutable

  def copy(self):
    """A new Scope with the same Rngs and ``mutable``."""
    return Scope(self.rngs, self.mutable)


def has_setup(x: tp.Any) -> bool:
  """Whether ``x`` has a callable ``setup`` method."""
  return callable(getattr(x, 'setup', None))


def compact(f: F) -> F:
  """Marks a method as compact: submodules created in it are attached to the
  Module with automatic names and reused by later calls."""
  f.compact = True  # type: ignore[attr-defined]
  return f


def _ensure_setup(module) -> None:
  if id(module) in _RUN.setup_done or not has_setup(module):
    return
  _RUN.setup_done.add(id(module))
  _mark_initializing(module)
  # As in Flax 0.12.8, attributes that setup() assigns keep the values it
  # gives them (variables passed to apply() only fill param()/variable()).
  with _entered(module, in_compact=False):
    module.setup()
  set_is_setup(module, True)


def _mark_initializing(module) -> None:
  """During a bridge Module's ``init``, marks ``module`` (a bridge Module
  of the running graph) as initializing (``_pytree__state.initializing``)."""
  if (
    _RUN.initializing
    and isinstance(module, Pytree)
    and getattr(module, 'scope', None) is not None
  ):
    set_initializing(module, True)


def _wrap_method(f):
  in_compact = bool(getattr(f, 'compact', False))

  @functools.wraps(f)
  def wrapped(self, *args, **kwargs):
    _ensure_setup(self)
    _mark_initializing(self)
    with _entered(self, in_compact):
      return f(self, *args, **kwargs)

  wrapped._bridge_wrapped = True  # type: ignore[attr-defined]
  return wrapped


class ModuleMeta(nnx_module.ModuleMeta):
  """Metaclass of bridge Modules: gives each new Module a ``scope`` and
  ``attr_priorities``, and attaches Modules created inside a compact method
  to the running Module (``name=`` chooses the attribute name)."""

  def __call__(cls: type[M], *args, **kwargs) -> M:
    entry = current_context()
    name = detached = None
    if entry is not None:
      # Inside a method of a running bridge Module (setup included):
      # ``name=`` attaches the new Module to it under that name (a
      # constructor argument too if the class takes one), ``parent=None``
      # leaves it detached, and a compact method attaches the others with
      # automatic names.
      if 'parent' in kwargs:
        parent = kwargs.pop('parent')
        if parent is not None:
          raise ValueError(
            f"'parent' can only be set to None, got {type(parent).__name__}"
          )
        detached = True
      if _takes_name(cls):
        name = kwargs.get('name')
      else:
        name = kwargs.pop('name', None)
    obj = cls.__new__(cls, *args, **kwargs)
    obj.scope = data(None)
    obj.__init__(*args, **kwargs)
    obj.attr_priorities = {}
    if cls._pytree__is_pytree:
      check_pytree(obj)
    if detached and name is None and entry.in_compact:
      entry.type_counter[cls] += 1  # a detached Module uses up its name
    if entry is None or detached or (name is None and not entry.in_compact):
      return obj
    return _attach(entry, obj, name)


def _takes_name(cls) -> bool:
  """Whether the constructor of ``cls`` has a ``name`` parameter (e.g. a
  ``name`` field)."""
  try:
    params = inspect.signature(cls.__init__).parameters
  except (TypeError, ValueError):
    return False
  return 'name' in params


def _attach(entry: ModuleStackEntry, obj, name: str | None, kind=None):
  """Attaches ``obj`` to the running Module under ``name`` (or the next
  automatic name, from the class ``kind``), or returns the child already
  attached there."""
  parent = entry.module
  if name is None:
    kind = kind or type(obj)
    name = f'{kind.__name__}_{entry.type_counter[kind]}'
    entry.type_counter[kind] += 1
  existing = vars(parent).get(name)
  if existing is not None and type(existing) is type(obj):
    obj = existing
  else:
    setattr(parent, name, obj)
  # The name a Module is created under comes before the other attributes
  # that refer to it (e.g. a list it is put in) in the Linen variables.
  parent.attr_priorities.setdefault(name, AttrPriority.INIT_PARENT)
  if isinstance(obj, ModuleBase):
    obj.scope = parent.scope
  pending = _pending_at(parent, (name,))
  if pending is not None:
    if isinstance(obj, ModuleBase):
      setattr(obj, _PENDING, pending)
    else:
      _load_into(obj, pending)
  return obj


def attach_child(parent, name, build, kind=None, helper='attach_child'):
  """Builds ``build(rngs)`` (with the running Module's Rngs); in a compact
  method it is attached like a submodule, under ``name`` or named after
  ``kind`` (default: the built object's class), elsewhere (``setup``) it is
  returned as is, to be assigned to an attribute. Used by the ``interop``
  helpers (``helper`` names the one called, for the error outside a bridge
  Module)."""
  entry = current_context()
  if entry is None or parent is None:
    raise AssertionError(f'{helper}() only needed inside bridge Module')
  if parent.scope is None:
    raise ValueError(
      f'{type(parent).__name__} is not bound to a Scope; run it with '
      'init() or apply().'
    )
  rngs = parent.scope.rngs
  if not _RUN.initializing and 'params' not in rngs and 'default' not in rngs:
    # Outside init the child's variables come from apply's variables; a
    # seeded default stream lets it be built without a params stream.
    rngs = Rngs(0, **dict(rngs.items()))
  child = build(rngs)
  if entry.module is not parent or not entry.in_compact:
    return child
  return _attach(entry, child, name, kind)


# The attribute of a bridge Module holding the variables apply() passed
# for it that no param() / variable() call or child took yet: ``{name:
# Variable or the dict of a child}``. Part of the Module's graph, so that
# transforms (e.g. a vmap in setup creating children) carry them.
_PENDING = '_bridge_pending'


def _pending_at(parent, path) -> dict | None:
  """Takes the variables apply() passed for the child of ``parent`` at
  ``path`` (attribute name, then list indices / dict keys) out of the
  parent's pending ones (each Variable stays in one place); None if there
  are none."""
  tree = vars(parent).get(_PENDING)
  owner = key = None
  for k in path:
    if not isinstance(tree, Mapping):
      return None
    owner, key = tree, (k if k in tree else str(k))
    tree = tree.get(key)
  if not isinstance(tree, dict):
    return None
  del owner[key]
  return tree


def _adopt(parent, path, value) -> None:
  """Binds the Modules assigned (directly or in lists, tuples and dicts)
  to an attribute of a running bridge Module: bridge Modules without a
  Scope get the parent's Scope, and all get the variables apply() passed
  for their path."""
  if isinstance(value, ModuleBase):
    if value.scope is not None:
      return
    value.scope = parent.scope
    pending = _pending_at(parent, path)
    if pending is not None:
      setattr(value, _PENDING, pending)
    for name, child in list(vars(value).items()):
      if name not in _OWN_ATTRS:
        _adopt(value, (name,), child)
  elif isinstance(value, nnx_module.Module):
    pending = _pending_at(parent, path)
    if pending is not None:
      _load_into(value, pending)
  elif isinstance(value, (list, tuple)):
    for i, item in enumerate(value):
      _adopt(parent, (*path, i), item)
  elif isinstance(value, dict):
    for key, item in value.items():
      _adopt(parent, (*path, key), item)


# Attributes of every bridge Module that are not children.
_OWN_ATTRS = frozenset({'scope', 'attr_priorities', _PENDING})


def _load_into(node, attrs: dict) -> None:
  """Writes the Variables in ``attrs`` into the matching Variables of
  ``node`` (a non-bridge Module, e.g. an NNX layer)."""
  found = graphlib.variables(node, Not(RngState))
  for path, var in found.flat_state():
    new = attrs
    for key in path:
      new = new.get(key) if isinstance(new, Mapping) else None
    if isinstance(new, Variable) and isinstance(new, type(var)):
      var.set_value(new.get_value())
  # Wrapped Linen Modules (ToNNX, above this module) keep their variables
  # as attributes, which they list with ``_linen_attrs``.
  linen_attrs = getattr(node, '_linen_attrs', None)
  if linen_attrs is not None and not linen_attrs():
    for name, value in attrs.items():
      setattr(node, name, data(value))


def _mutable_allows(mutable, col: str) -> bool:
  if mutable is True:
    return True
  if mutable is False or mutable is None:
    return False
  if isinstance(mutable, str):
    return mutable == col
  return col in mutable


def _linen_vars(module) -> dict:
  tree: dict = {}
  for path, var in _bridge_variables(module):
    bv._set_nested(tree, path, var)
  return bv.nnx_attrs_to_linen_vars(tree)


def _key_order(key):
  return (isinstance(key, str), key)


def _bridge_variables(root) -> list[tuple[tuple, Variable]]:
  """``(path, Variable)`` of the Variables reachable from bridge Module
  ``root`` (RNG state left out), each under its first path only: the
  attributes of a bridge Module come in the order of their priorities, then
  of their names (so a Module created under a name is found there before
  the other attributes that refer to it); other nodes in NNX's order."""
  seen: set[int] = set()
  out: list[tuple[tuple, Variable]] = []

  def visit(node, path):
    if isinstance(node, Variable):
      if id(node) not in seen and not isinstance(node, RngState):
        seen.add(id(node))
        out.append((path, node))
    elif isinstance(node, ModuleBase):
      if id(node) in seen:
        return
      seen.add(id(node))
      attrs = vars(node)
      priorities = attrs.get('attr_priorities') or {}
      names = [
        k
        for k in attrs
        if isinstance(k, str) and not k.startswith('_') and k not in _OWN_ATTRS
      ]
      names.sort(
        key=lambda k: (int(priorities.get(k, AttrPriority.DEFAULT)), k)
      )
      for name in names:
        visit(attrs[name], (*path, name))
    elif isinstance(node, (list, tuple)):
      for i, item in enumerate(node):
        visit(item, (*path, i))
    elif isinstance(node, Mapping):
      for key in sorted(node, key=_key_order):
        visit(node[key], (*path, key))
    elif graphlib.is_graph_node(node):
      if id(node) in seen:
        return
      seen.add(id(node))
      found = graphlib.variables(node, Not(RngState))
      for sub, var in found.flat_state():
        visit(var, (*path, *sub))

  visit(root, ())
  return out


def _as_rngs(rngs) -> Rngs:
  if rngs is None:
    return Rngs()
  if isinstance(rngs, Rngs):
    return rngs
  if isinstance(rngs, Mapping):
    return Rngs(**rngs)
  return Rngs(rngs)


def _as_dataclass(cls) -> None:
  """Makes a bridge Module subclass a dataclass, as Linen Modules are: its
  annotated class attributes are constructor fields (a ``__init__`` the
  class defines is kept). Instances still hash by identity."""
  own_hash = '__hash__' in vars(cls)
  dataclasses.dataclass(cls, repr=False)
  if not own_hash:
    cls.__hash__ = object.__hash__


class ModuleBase:
  """Attributes every bridge Module has: ``scope`` (None unless running
  under :meth:`Module.init`/:meth:`Module.apply`) and ``attr_priorities``."""

  scope: Scope | None
  attr_priorities: dict[str, AttrPriority]


class Module(nnx_module.Module, ModuleBase, metaclass=ModuleMeta, pytree=False):
  """Base class of bridge Modules (see the module docstring).

  As in Flax 0.12.8 they are not JAX pytrees (``pytree=False``): their
  attributes may hold Variables in plain lists and dicts.
  """

  def __init_subclass__(cls, **kwargs):
    super().__init_subclass__(**kwargs)
    for name, value in list(vars(cls).items()):
      if not callable(value) or isinstance(
        value, (type, staticmethod, classmethod)
      ):
        continue
      if name in ('setup', '__init__') or getattr(
        value, '_bridge_wrapped', False
      ):
        continue
      if name.startswith('_') and name != '__call__':
        continue
      setattr(cls, name, _wrap_method(value))
    if not vars(cls).get('_bridge_no_dataclass', False):
      _as_dataclass(cls)

  def __getattr__(self, name: str):
    # A running Module's setup() runs on first need, also when another
    # Module reads an attribute it defines (e.g. a parent's setup reading
    # ``self.child.layer``).
    if (
      not name.startswith('__')
      and vars(self).get('scope') is not None
      and id(self) not in _RUN.setup_done
      and has_setup(type(self))
    ):
      _ensure_setup(self)
      if name in vars(self):
        return vars(self)[name]
    raise AttributeError(
      f'{type(self).__name__!r} object has no attribute {name!r}'
    )

  def __setattr__(self, name, value):
    super().__setattr__(name, value)
    if name not in _OWN_ATTRS and vars(self).get('scope') is not None:
      _adopt(self, (name,), value)

  def set_attr_priority(self, name: str, value: AttrPriority):
    """Sets where attribute ``name`` comes in the Linen-style variables."""
    self.attr_priorities[name] = value

  def is_initializing(self) -> bool:
    """True while running under :meth:`init` (or ``apply(_initialize=True)``)."""
    return _RUN.initializing

  def make_rng(self, name: str = 'default') -> jax.Array:
    """A new key from stream ``name`` of the Scope's Rngs."""
    if self.scope is None:
      raise ValueError(
        f'{type(self).__name__} has no Scope to draw keys from; run it with '
        'init() or apply().'
      )
    return self.scope.rngs[name]()

  def _variable(self, col, name, make, unbox):
    existing = vars(self).get(name)
    if isinstance(existing, Variable):
      return existing
    pending = vars(self).get(_PENDING)
    if pending and isinstance(pending.get(name), Variable):
      # taken: the Variable moves to its attribute
      var = pending.pop(name)
      setattr(self, name, var)
      return var
    if self.scope is None:
      raise ValueError(
        f'Variable {name!r} of {type(self).__name__} does not exist yet. '
        'Parameters must be initialized in `setup()` or in a method '
        'wrapped in `@compact`, with the Module run by init() or apply().'
      )
    if col != 'params' and not (
      _RUN.initializing or _mutable_allows(self.scope.mutable, col)
    ):
      raise ValueError(
        f'Cannot create variable {name!r} in collection {col!r}: the '
        'collection is not mutable; pass it in apply(..., mutable=...).'
      )
    value = make()
    if unbox:
      var = bv.to_nnx_var(col, value)
    else:
      var = variable_type_from_name(col, allow_register=True)(value)
    setattr(self, name, var)
    return var

  def param(
    self,
    name: str,
    init_fn: tp.Callable[..., A],
    *init_args,
    unbox: bool = True,
    **init_kwargs,
  ):
    """Returns Param ``name``, creating it with
    ``init_fn(self.make_rng('params'), *init_args, **init_kwargs)``.

    A value boxed in Linen metadata (e.g. ``Partitioned``) becomes Variable
    metadata unless ``unbox=False``.
    """
    return self._variable(
      'params',
      name,
      lambda: init_fn(self.make_rng('params'), *init_args, **init_kwargs),
      unbox,
    )

  def variable(
    self,
    col: str,
    name: str,
    init_fn: tp.Callable[..., A] | None = None,
    *init_args,
    unbox: bool = True,
    **init_kwargs,
  ):
    """Returns the Variable ``name`` of Linen collection ``col``, creating it
    with ``init_fn(*init_args, **init_kwargs)`` (None without ``init_fn``)."""

    def make():
      return None if init_fn is None else init_fn(*init_args, **init_kwargs)

    return self._variable(col, name, make, unbox)

  @property
  def variables(self):
    """This Module's variables as a Linen dict ``{collection: tree}``."""
    return _linen_vars(self)

  def _run(self, rngs, variables, args, kwargs, method, mutable, initializing):
    module = graphlib.clone(self)
    module.scope = Scope(_as_rngs(rngs), True if initializing else mutable)
    previous = (_RUN.initializing, _RUN.setup_done)
    _RUN.initializing = initializing
    _RUN.setup_done = set()
    if variables:
      setattr(module, _PENDING, bv.linen_vars_to_nnx_attrs(variables))
    try:
      if isinstance(method, str):
        fn = getattr(module, method)
      else:
        fn = functools.partial(method, module)
      ctx = _initializing() if initializing else contextlib.nullcontext()
      if initializing:
        _set_initializing(module, True)
      with ctx:
        out = fn(*args, **kwargs)
      return out, _linen_vars(module)
    finally:
      _RUN.initializing, _RUN.setup_done = previous
      if initializing:
        _set_initializing(module, False)

  def init_with_output(
    self,
    rngs: int | jax.Array | dict[str, jax.Array] | Rngs | None = None,
    *args,
    method: tp.Callable[..., tp.Any] | str = '__call__',
    mutable: tp.Any = False,
    **kwargs,
  ) -> tuple[tp.Any, dict[str, tp.Mapping]]:
    """Runs ``method`` creating every variable; returns ``(output,
    variables)``, or with ``mutable`` only those collections."""
    out, variables = self._run(
      rngs, None, args, kwargs, method, True, initializing=True
    )
    if mutable is not False:
      variables = {
        c: v for c, v in variables.items() if _mutable_allows(mutable, c)
      }
    return out, variables

  def init(
    self,
    rngs: int | jax.Array | dict[str, jax.Array] | Rngs | None = None,
    *args,
    method: tp.Callable[..., tp.Any] | str = '__call__',
    **kwargs,
  ):
    """Runs ``method`` creating every variable and returns them as a Linen
    dict ``{collection: tree}``; this Module is left unchanged."""
    return self.init_with_output(rngs, *args, method=method, **kwargs)[1]

  def apply(
    self,
    variables: dict[str, tp.Mapping],
    *args,
    rngs: int | jax.Array | dict[str, jax.Array] | Rngs | None = None,
    method: tp.Callable[..., tp.Any] | str = '__call__',
    mutable: tp.Any = False,
    _initialize: bool = False,
    **kwargs,
  ) -> tp.Any:
    """Runs ``method`` with ``variables``; returns the output, and with
    ``mutable`` also the variables after the call (every collection).

    Args:
      variables: Linen-style ``{collection: tree}``.
      *args: inputs of the method.
      rngs: seed, key, dict of keys or Rngs for :meth:`make_rng`.
      method: the method (name or function); ``__call__`` by default.
      mutable: collections new variables may be created in (a Linen
        filter); when not False the variables are returned too.
      _initialize: create missing variables as :meth:`init` does.
      **kwargs: keyword inputs of the method.
    """
    out, new_vars = self._run(
      rngs, variables, args, kwargs, method, mutable, initializing=_initialize
    )
    if mutable is False:
      return out
    return out, new_vars
