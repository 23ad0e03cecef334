"""The Linen ``Module``: a dataclass bound lazily to a ``flax.core.Scope``.

A Module is a description (its dataclass fields); its variables live in
the Scope it is bound to during ``init``/``apply``/``bind``. Submodules are
created in ``setup`` or inside the single ``@compact`` method, and are named
after the attribute holding them or with a per-class counter (``Dense_0``).

>>> import jax, jax.numpy as jnp
>>> from flax import linen as nn
>>> class Scale(nn.Module):
...   @nn.compact
...   def __call__(self, x):
...     return x * self.param('w', jax.nn.initializers.ones, x.shape[-1:])
>>> variables = Scale().init(jax.random.key(0), jnp.ones(3))
>>> variables['params']['w'].shape
(3,)
"""

import dataclasses
import functools
import inspect
import itertools
import typing
from typing import Any, Optional, Union

import jax

from flax import errors
from flax import traceback_util
from flax.configurations import config
from flax.core.scope import DenyList
from flax.core.frozen_dict import FrozenDict
from flax.linen import _context as _context_lib
from flax.linen import _module_tree
from flax.linen import _module_parent
from flax.linen import _module_variables
from flax.linen._module_class import _compact_name_scope_methods
from flax.linen._module_class import _freeze_attr as _freeze_attr
from flax.linen._module_class import (
  _get_local_method_names as _get_local_method_names,
)
from flax.linen._module_class import (
  _get_suffix_value_pairs as _get_suffix_value_pairs,
)
from flax.linen._module_class import _guard_hash
from flax.linen._module_class import _present_trailing_fields
from flax.linen._method_wrapping import _UNWRAPPED
from flax.linen._method_wrapping import _derive_profiling_name
from flax.linen._method_wrapping import _get_fn_name
from flax.linen._method_wrapping import _wrap_descriptor_once
from flax.linen._method_wrapping import (
  capture_call_intermediates as capture_call_intermediates,
)
from flax.linen._method_wrapping import compact as compact
from flax.linen._method_wrapping import nowrap as nowrap
from flax.linen._method_wrapping import wrap_method_once
from flax.linen._module_parent import ParentDescriptor as ParentDescriptor
from flax.linen._test_scope import TestScope as TestScope
from flax.linen import kw_only_dataclasses
from flax.linen._module_state import _init_field_names as _init_field_names
from flax.linen._module_state import _config_field_names as _config_field_names
from flax.linen._module_state import (
  _config_field_values as _config_field_values,
)
from flax.linen._module_state import _Sentinel as _Sentinel
from flax.linen._module_state import _unspecified as _unspecified
from flax.linen._module_state import _unspecified_parent as _unspecified_parent
from flax.linen._module_state import SetupState as SetupState
from flax.linen._module_state import (
  _ModuleInternalState as _ModuleInternalState,
)
from flax.linen._module_state import (
  _uninitialized_state as _uninitialized_state,
)

context = _context_lib.context
# The per-thread context under the name code built on Linen reads it by
# (``nn.module._context.module_stack[-1]`` is the Module being run).
_context = context
_DynamicContext = _context_lib._DynamicContext
_ids = itertools.count()
_Sentinel.__module__ = __name__


ParentType = Union['Module', Any, _Sentinel, None]


class ModuleBase:
  """The base class of :class:`Module` (holds no behaviour of its own)."""


_module_parent.register_weak_parent_type(ModuleBase)
_PARENT_DESCRIPTOR = ParentDescriptor()


# Field values of these types may hold Modules (lists and dicts are also
# frozen); a value of any other type is kept as it is.
_MAY_HOLD_MODULES = (ModuleBase, dict, FrozenDict, list, tuple)


# Sets an attribute past Module.__setattr__'s checks.
_force_setattr = object.__setattr__

_TABULATE_OPTIONS = (
  'depth',
  'show_repeated',
  'mutable',
  'console_kwargs',
  'table_kwargs',
  'column_kwargs',
  'compute_flops',
  'compute_vjp_flops',
)


class Module(ModuleBase, _module_variables.VariableMethods):
  """Base class of all Linen neural-network layers.

  Subclasses are dataclasses: annotated class attributes are the
  construction arguments, followed by ``parent`` and ``name``. Define
  submodules and variables in ``setup()`` or in one ``@nn.compact``
  method, and run the Module with ``init``/``apply``.

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class Affine(nn.Module):
  ...   features: int
  ...   @nn.compact
  ...   def __call__(self, x):
  ...     w = self.param('w', jax.nn.initializers.ones,
  ...                    (x.shape[-1], self.features))
  ...     return x @ w
  >>> model = Affine(2)
  >>> variables = model.init(jax.random.key(0), jnp.ones((1, 3)))
  >>> model.apply(variables, jnp.ones((1, 3)))
  Array([[3., 3.]], dtype=float32)
  """

  if typing.TYPE_CHECKING:
    name: Optional[str]
    parent: ParentType
    scope: Any

  scope = None
  _state = _uninitialized_state

  def __init_subclass__(cls, kw_only: bool = False, **kwargs):
    super().__init_subclass__(**kwargs)
    own = cls.__dict__.get('__annotations__', {})
    reserved = [n for n in kw_only_dataclasses.TRAILING_FIELDS if n in own]
    if reserved:
      raise errors.ReservedModuleAttributeError(own)
    # ``parent`` and ``name`` are keyword-only in ``__init__`` (a stray
    # positional argument is an error), though the signature lists them
    # as ordinary trailing parameters.
    trailing = [
      (
        'parent',
        _parent_type(),
        dataclasses.field(
          repr=False, default=_unspecified_parent, kw_only=True
        ),
      ),
      ('name', Optional[str], dataclasses.field(default=None, kw_only=True)),
    ]
    kw_only_dataclasses.module_dataclass(
      cls,
      trailing,
      kw_only=kw_only,
      unsafe_hash='__hash__' not in cls.__dict__,
    )
    _present_trailing_fields(cls)
    _guard_hash(cls)
    cls._compact_name_scope_methods = _compact_name_scope_methods(cls)
    # The dataclass left the default on the class; ``parent`` is read and
    # written through the descriptor (stored in ``_parent_ref``).
    type.__setattr__(cls, 'parent', _PARENT_DESCRIPTOR)
    # Several methods may be @compact (as in Flax 0.12.8); they share the
    # autonaming of the Module (see ``_module_names``).
    cls._wrap_module_attributes()
    cls.scope = None
    cls._state = _uninitialized_state

  @classmethod
  def _wrap_module_attributes(cls):
    field_names = {f.name for f in dataclasses.fields(cls)}
    for key, value in list(cls.__dict__.items()):
      if key in field_names or key in _UNWRAPPED:
        continue
      if isinstance(value, (staticmethod, classmethod)):
        continue
      if inspect.isfunction(value):
        if getattr(value, 'nowrap', False):
          continue
        setattr(cls, key, wrap_method_once(value))
      elif (
        hasattr(value, '__get__')
        and not inspect.isclass(value)
        and not callable(value)
        and key != '__dict__'
        and not key.startswith('__')
      ):
        if getattr(value, 'nowrap', False):
          continue
        setattr(cls, key, _wrap_descriptor_once(value))

  # -- construction and attachment ------------------------------------------

  def __post_init__(self) -> None:
    object.__setattr__(self, '_id', next(_ids))
    object.__setattr__(self, '_state', _ModuleInternalState())
    parent = self.parent
    if parent is _unspecified_parent:
      parent = context.module_stack[-1]
      object.__setattr__(self, 'parent', parent)
    if parent is None:
      return
    if isinstance(parent, Module):
      pstate = parent._state
      if pstate.in_setup and self.name is None:
        # Named later, by the attribute it is assigned to.
        return
      if not parent._initialization_allowed:
        raise errors.AssignSubModuleError(type(self).__name__)
      if self.name is None:
        prefix = type(self).__name__
        cursor = pstate.autoname_cursor.get(prefix, 0)
        object.__setattr__(self, 'name', f'{prefix}_{cursor}')
        pstate.autoname_cursor[prefix] = cursor + 1
      reuse = pstate.in_setup and pstate.setup_called == SetupState.TRANSFORMED
      if parent.scope is None:
        raise errors.AssignSubModuleError(type(self).__name__)
      if parent._name_taken(self.name) and not (
        reuse and self.name in parent.scope.reservations
      ):
        raise errors.NameInUseError(
          'submodule', self.name, type(parent).__name__
        )
      pstate.children[self.name] = self
      object.__setattr__(
        self, 'scope', parent.scope.push(self.name, reuse=reuse)
      )
    elif _is_scope(parent):
      object.__setattr__(self, 'scope', parent)
    else:
      raise ValueError('parent must be None, Module or Scope')
    self._register_field_submodules()
    self._state.is_initialized = True

  def __repr__(self) -> str:
    return _module_tree.module_repr(self)

  @property
  def _initialization_allowed(self) -> bool:
    state = self._state
    return not state.is_initialized or state.in_setup or state.in_compact_method

  def _name_taken(self, name: str, col: Optional[str] = None) -> bool:
    """Whether ``name`` is already used in this Module's scope.

    A variable may share its name with variables of other collections; a
    submodule (``col=None``) may share it with nothing.
    """
    taken = self.scope.reservations.get(name)
    return bool(taken) and (None in taken or col is None or col in taken)

  def _register_field_submodules(self) -> None:
    # Most fields hold plain values: test them all at C speed first.
    values = _config_field_values(self)
    if any(map(isinstance, values, itertools.repeat(_MAY_HOLD_MODULES))):
      names = _config_field_names(type(self))
      for name, value in zip(names, values):
        if isinstance(value, _MAY_HOLD_MODULES):
          self._register_submodules(name, value)

  def _register_submodules(self, name: str, value: Any) -> None:
    """Adopts the Modules inside attribute ``name`` as children."""
    preserve = getattr(
      type(self), 'preserve_adopted_names', config.flax_preserve_adopted_names
    )
    queue = []
    adoptions = None

    def adopt(suffix, sub):
      nonlocal adoptions
      # A parentless Module is adopted as a copy, left untouched itself:
      # wherever else the bound tree holds it (another field, another
      # Module's field), it is the same copy.
      if sub.parent is None:
        if adoptions is None:
          adoptions = self._root_adoptions()
        adopted = adoptions.get(id(sub))
        if adopted is not None:
          return adopted[1]
        adopted_name = None
        if preserve:
          adopted_name = object.__getattribute__(sub, 'name')
        copy = sub.clone()
        object.__setattr__(copy, 'parent', self)
        object.__setattr__(copy, 'name', adopted_name or f'{name}{suffix}')
        adoptions[id(sub)] = (sub, copy)
        queue.append(copy)
        return copy
      if sub.name is None:
        object.__setattr__(sub, 'parent', self)
        object.__setattr__(sub, 'name', f'{name}{suffix}')
        queue.append(sub)
      return sub

    value = _module_tree.freeze_attr(
      _module_tree.map_modules_with_suffix(adopt, value)
    )
    object.__setattr__(self, name, value)
    for sub in queue:
      sub.__post_init__()

  def _root_adoptions(self) -> dict:
    root = self
    while isinstance(root.parent, Module):
      root = root.parent
    return root._state.adoptions

  def __setattr__(self, name: str, value: Any) -> None:
    state = self._state
    if not state.in_setup:
      # Dunders (``__class__``: libraries swap a Module's class to wrap its
      # methods) are Python's own and never frozen.
      if not state.is_initialized or name[:2] == '__' == name[-2:]:
        object.__setattr__(self, name, value)
        return
      raise errors.SetAttributeFrozenModuleError(
        type(self).__name__, name, value
      )
    if name in _init_field_names(type(self)):
      raise errors.SetAttributeInModuleSetupError()
    self._register_submodules(name, value)

  def __getattr__(self, name: str) -> Any:
    # Dunder lookups (copy, pickle, ...) never trigger setup.
    if name.startswith('__'):
      raise AttributeError(name)
    self._try_setup()
    if name in self.__dict__:
      return self.__dict__[name]
    msg = f'"{type(self).__name__}" object has no attribute "{name}".'
    if self.scope is None:
      msg += (
        f' If "{name}" is defined in \'.setup()\', remember these fields '
        "are only accessible from inside 'init' or 'apply'."
      )
    raise AttributeError(msg)

  def __dir__(self):
    # Attributes defined in ``setup`` are listed too.
    self._try_setup()
    return object.__dir__(self)

  def _try_setup(self, shallow: bool = False) -> None:
    state = self._state
    if (
      self.scope is None
      or state.setup_called == SetupState.DONE
      or state.in_setup
    ):
      return
    try:
      state.in_setup = True
      self._register_field_submodules()
      if not shallow:
        self.setup()
      elif state.setup_called == SetupState.NEW:
        # Before a lifted transform, whose clones run ``setup`` inside it.
        self._validate_setup()
    finally:
      state.in_setup = False
      if not shallow:
        state.setup_called = SetupState.DONE

  def _validate_setup(self) -> None:
    """Runs ``setup`` abstractly on a throwaway clone, for its errors.

    A lifted transform runs ``setup`` on the clones it binds to its lifted
    scopes; this run, before the transform, raises the Python errors of
    ``setup`` (name collisions and the like) where the Module is used. The
    clone is bound to an empty ``TestScope`` under ``jax.eval_shape``, so
    no variable or PRNG stream of this Module is touched.
    """

    def run_setup_only(x):
      with TestScope({}, rngs={}, mutable=True).temporary() as root:
        return _setup_only(self.clone(parent=root, _deep_clone=True), x)

    jax.eval_shape(run_setup_only, 0)

  def setup(self) -> None:
    """Initializes submodules and variables lazily; override it.

    ``setup`` runs once, on a bound Module, right before the first method
    call or setup-attribute access. Attributes assigned here become
    submodules (named after the attribute) or plain values.
    """

  def _call_wrapped_method(self, fun, args, kwargs):
    if self._state is _uninitialized_state:
      raise errors.IncorrectPostInitOverrideError()
    is_compact = getattr(fun, 'compact', False)
    fun_name = _get_fn_name(fun)
    is_setup = fun_name == 'setup'
    state = self._state
    if is_setup:
      if self.scope is None:
        raise errors.CallSetupUnboundModuleError()
      is_recurrent = state.in_setup
      state.in_setup = True
    else:
      self._try_setup()
    if is_compact:
      if self.scope is None:
        raise errors.CallCompactUnboundModuleError()
      is_recurrent = state.in_compact_method
      state.in_compact_method = True
    context.module_stack.append(self)
    try:
      if context.interceptor_stack:
        run = functools.partial(_run_interceptors, fun)
      else:
        run = fun
      if context.use_named_call() and self.scope is not None:
        with jax.named_scope(_derive_profiling_name(self, fun)):
          y = run(self, *args, **kwargs)
      else:
        y = run(self, *args, **kwargs)
      capture = context.capture_stack
      if capture and self.scope is not None:
        # The innermost capture_intermediates filter decides.
        wanted = capture[-1]
        if wanted and wanted(self, fun_name):
          self.sow('intermediates', fun_name, y)
      return y
    finally:
      context.module_stack.pop()
      if is_compact:
        _force_setattr(self, 'scope', self.scope.rewound())
      if (is_compact or is_setup) and not is_recurrent:
        state.reset()

  # -- cloning and binding ---------------------------------------------------

  def clone(
    self, *, parent=None, _deep_clone=False, _reset_names=False, **updates
  ) -> 'Module':
    """Returns a copy of this Module with some fields changed.

    The copy is unbound (``parent=None``) unless ``parent`` is given.

    >>> from flax import linen as nn
    >>> class M(nn.Module):
    ...   features: int
    >>> M(2).clone(features=4).features
    4
    """
    attrs = dict(
      zip(_config_field_names(type(self)), _config_field_values(self))
    )
    attrs['name'] = self.name
    attrs['parent'] = parent
    attrs.update(updates)
    if _deep_clone is not False:
      cache = {} if isinstance(_deep_clone, bool) else _deep_clone

      def clone_fn(m):
        key = m._id
        if key not in cache:
          if _reset_names:
            cache[key] = m.clone(
              _deep_clone=cache, _reset_names=_reset_names, name=None
            )
          else:
            cache[key] = m.clone(_deep_clone=cache)
        return cache[key]

      for key, value in attrs.items():
        if key != 'parent':
          attrs[key] = _module_tree.map_modules(clone_fn, value)
    return type(self)(**attrs)

  def copy(
    self, *, parent=_unspecified_parent, name=None, **updates
  ) -> 'Module':
    """Returns a deep copy of this Module, as a new Module.

    Like a Module constructed at this point, the copy's parent is the
    Module whose method is running (unless ``parent`` is given) and it
    gets a fresh automatic name unless ``name`` is given, so a copy made in
    a ``@compact`` method is a new submodule with its own variables.

    >>> import jax, jax.numpy as jnp
    >>> from flax import linen as nn
    >>> class Scale(nn.Module):
    ...   @nn.compact
    ...   def __call__(self, x):
    ...     return x * self.param('w', jax.nn.initializers.ones, x.shape)
    >>> class M(nn.Module):
    ...   @nn.compact
    ...   def __call__(self, x):
    ...     scale = Scale()
    ...     return scale.copy()(scale(x))
    >>> sorted(M().init(jax.random.key(0), jnp.ones((1, 2)))['params'])
    ['Scale_0', 'Scale_1']
    """
    return self.clone(parent=parent, name=name, _deep_clone=True, **updates)

  def _module_checks(self):
    if not isinstance(self, Module):
      raise errors.InvalidInstanceModuleError()
    if self._state is _uninitialized_state:
      raise errors.IncorrectPostInitOverrideError()

  def bind(self, variables, *args, rngs=None, mutable=False) -> 'Module':
    """Returns a clone of this Module bound to ``variables``.

    The bound Module can be used interactively (its setup submodules and
    methods are available) for as long as the variables exist.

    >>> import jax, jax.numpy as jnp
    >>> from flax import linen as nn
    >>> class M(nn.Module):
    ...   @nn.compact
    ...   def __call__(self, x):
    ...     return x + self.param('b', jax.nn.initializers.ones, x.shape)
    >>> v = M().init(jax.random.key(0), jnp.zeros(2))
    >>> M().bind(v)(jnp.zeros(2))
    Array([1., 1.], dtype=float32)
    """
    Module._module_checks(self)
    del args
    from flax.core import scope as core_scope

    scope = core_scope.bind(variables, rngs=rngs, mutable=mutable)
    return self.clone(parent=scope, _deep_clone=True)

  def unbind(self):
    """Returns ``(unbound_clone, variables)`` of a bound Module."""
    Module._module_checks(self)
    if self.scope is None:
      raise errors.CallUnbindOnUnboundModuleError()
    module = self.clone(_deep_clone=True, _reset_names=True, name=None)
    return module, self.variables

  # -- running ---------------------------------------------------------------

  @traceback_util.api_boundary
  def apply(
    self,
    variables,
    *args,
    rngs=None,
    method=None,
    mutable=False,
    capture_intermediates=False,
    **kwargs,
  ):
    """Runs ``method`` (default ``__call__``) with the given variables.

    Args:
      variables: the variables, ``{collection: {...}}``.
      *args: positional arguments of the method.
      rngs: ``{stream_name: key}`` for the PRNG streams it needs, or one
        PRNG key (used as the ``'params'`` stream).
      method: the method to run: a function taking the Module first, a
        method of this Module, or a method's name.
      mutable: collections that may change: ``False``, ``True``, a name, a
        list of names or a ``DenyList``.
      capture_intermediates: ``True`` to store every ``__call__`` output in
        ``'intermediates'``, or a filter ``fn(module, method_name)``.
      **kwargs: keyword arguments of the method.

    Returns:
      The output, or ``(output, mutated_variables)`` if anything is
      mutable.
    """
    Module._module_checks(self)
    if rngs is not None:
      rngs = _check_rngs(self, rngs)
    method = _resolve_method(self, method)
    from flax.linen import _functional

    return _functional.apply(
      method,
      self,
      mutable=mutable,
      capture_intermediates=capture_intermediates,
    )(variables, *args, rngs=rngs, **kwargs)

  @traceback_util.api_boundary
  def init_with_output(
    self,
    rngs,
    *args,
    method=None,
    mutable=DenyList('intermediates'),
    capture_intermediates=False,
    **kwargs,
  ):
    """Like ``init`` but returns ``(output, variables)``."""
    Module._module_checks(self)
    rngs = _check_rngs(self, rngs)
    method = _resolve_method(self, method)
    from flax.linen import _functional

    settings = dict(
      mutable=mutable, capture_intermediates=capture_intermediates
    )
    initializer = _functional.init_with_output(method, self, **settings)
    return initializer(rngs, *args, **kwargs)

  @traceback_util.api_boundary
  def init(
    self,
    rngs,
    *args,
    method=None,
    mutable=DenyList('intermediates'),
    capture_intermediates=False,
    **kwargs,
  ):
    """Initializes the variables by running ``method`` (``__call__``).

    Args:
      rngs: a PRNG key (used for ``'params'``) or ``{stream: key}``.
      *args: inputs of the method.
      method: the method to run (see ``apply``).
      mutable: collections that init creates; by default every one except
        ``'intermediates'``.
      capture_intermediates: see ``apply``.
      **kwargs: keyword inputs of the method.

    Returns:
      The variables.
    """
    Module._module_checks(self)
    settings = dict(
      mutable=mutable, capture_intermediates=capture_intermediates
    )
    outputs = self.init_with_output(
      rngs, *args, method=method, **settings, **kwargs
    )
    return outputs[1]  # the variables; the call's output is dropped

  @traceback_util.api_boundary
  def lazy_init(
    self, rngs, *args, method=None, mutable=DenyList('intermediates'), **kwargs
  ):
    """Initializes variables from input shapes only.

    Inputs may be ``jax.ShapeDtypeStruct``; the forward computation on
    them is not performed. A variable whose value depends on input data
    raises ``LazyInitError``.
    """
    Module._module_checks(self)
    from flax.core import partial_eval

    def fn(rngs, *args, **kwargs):
      return self.init(rngs, *args, method=method, mutable=mutable, **kwargs)

    return partial_eval.lazy_init(fn)(rngs, *args, **kwargs)

  def tabulate(
    self,
    rngs,
    *args,
    depth=None,
    show_repeated=False,
    mutable=DenyList('intermediates'),
    console_kwargs=None,
    table_kwargs=None,
    column_kwargs=None,
    compute_flops=False,
    compute_vjp_flops=False,
    **kwargs,
  ) -> str:
    """Returns a table summarizing this Module (see ``nn.tabulate``)."""
    from flax.linen import summary

    # Every option goes on to nn.tabulate under its own name.
    given = locals()
    options = {k: given[k] for k in _TABULATE_OPTIONS}
    return summary.tabulate(self, rngs, **options)(*args, **kwargs)

  def module_paths(
    self,
    rngs,
    *args,
    show_repeated=False,
    mutable=DenyList('intermediates'),
    **kwargs,
  ) -> dict:
    """Returns ``{path: module}`` for every Module called by ``__call__``."""
    from flax.linen import summary

    return summary.module_paths(
      self,
      rngs,
      *args,
      show_repeated=show_repeated,
      mutable=mutable,
      **kwargs,
    )


# The variable methods are written in their own file but are Module's own
# (``Module.param.__qualname__`` is ``'Module.param'``, as users see them).
for _name, _fn in vars(_module_variables.VariableMethods).items():
  if callable(_fn) and not _name.startswith('__'):
    _fn.__qualname__ = f'Module.{_name}'
del _name, _fn


# Called on a clone by ``Module._validate_setup``: a wrapped method runs
# ``setup`` first (interceptors see both calls, the second as ``<lambda>``).
_setup_only = wrap_method_once(lambda module, x: x)


def _parent_type():
  from flax.core.scope import Scope

  return Union[Module, Scope, _Sentinel, None]


def _is_scope(x) -> bool:
  from flax.core import scope as core_scope

  return isinstance(x, core_scope.Scope)


def _get_unbound_fn(method_or_fn):
  if inspect.ismethod(method_or_fn) and isinstance(
    method_or_fn.__self__, Module
  ):
    method_or_fn = method_or_fn.__func__
  if not callable(method_or_fn) or (
    inspect.isclass(method_or_fn) and issubclass(method_or_fn, Module)
  ):
    raise errors.ApplyModuleInvalidMethodError(method_or_fn)
  # The Module is passed first: a function without parameters cannot be
  # applied.
  if not _signature_parameters(method_or_fn):
    raise errors.ApplyModuleInvalidMethodError(method_or_fn)
  return method_or_fn


def _signature_parameters(fn):
  try:
    return inspect.signature(fn).parameters
  except (TypeError, ValueError):
    # No signature to read (some builtins): let the call decide.
    return (None,)


def _resolve_method(module, method):
  if isinstance(method, str):
    attribute_name = method

    def call_attribute(self, *args, **kwargs):
      return getattr(self, attribute_name)(*args, **kwargs)

    # Looked up on the unbound module: attributes defined in ``setup`` are
    # not there (AttributeError, as Flax).
    method = getattr(module, attribute_name)
    if not callable(method):
      raise TypeError(
        f"'{type(module).__name__}.{attribute_name}' must be a callable, "
        f'got {type(method)}.'
      )
    if isinstance(method, Module):
      return call_attribute
  elif method is None:
    if not callable(module):
      raise AttributeError(
        f'"{type(module).__name__}" object has no attribute "__call__". If '
        '"__call__" is defined in \'.setup()\', remember these fields are '
        "only accessible from inside 'init' or 'apply'."
      )
    method = module.__call__
  return _get_unbound_fn(method)


def _check_rngs(module, rngs):
  if isinstance(rngs, (dict, FrozenDict)):
    return rngs
  from flax.core import scope as core_scope

  if not core_scope.is_valid_rng(rngs):
    raise errors.InvalidRngError(
      'RNGs should be of shape (2,) or PRNGKey in Module '
      f'{type(module).__name__}, but rngs are: {rngs}'
    )
  return {'params': rngs}


# Names Flax offers at ``flax.linen.module`` that live in their own files.
from flax.linen._module_names import *  # noqa: E402,F401,F403
from flax.linen._name_scopes import CompactNameScope as CompactNameScope  # noqa: E402
from flax.linen._name_scopes import compact_name_scope as compact_name_scope  # noqa: E402

run_interceptors = _run_interceptors = _context_lib.run_interceptors

# The functional API lives in ``_functional``, which imports this module;
# it is offered here lazily.
_FUNCTIONAL_NAMES = frozenset(
  {
    'InterceptorContext',
    'apply',
    'init',
    'init_with_output',
    'intercept_methods',
    'merge_param',
    'share_scope',
  }
)


def __getattr__(name):
  if name in _FUNCTIONAL_NAMES:
    from flax.linen import _functional

    value = getattr(_functional, name)
    globals()[name] = value
    return value
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


# Helpers that code built on Linen imports from this module by name.
_module_repr = _module_tree.module_repr
_attr_repr = _module_tree.attr_repr
_sorted_items = _module_tree.sorted_items
_get_unspecified_parent = _unspecified
