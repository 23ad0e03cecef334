"""Wrappers that run a Linen Module in NNX and an NNX Module in Linen.

:class:`ToNNX` makes an NNX Module out of a Linen Module: its variables
become NNX Variables held as attributes (one attribute per top-level Linen
name), created by :func:`lazy_init` from sample inputs.

:class:`ToLinen` (and :func:`to_linen`) makes a Linen Module out of an NNX
Module class: the NNX Module is built at ``init`` with keys from the Linen
RNG streams, and its Variables are stored in the Linen collections that
their types are registered for.

>>> import jax, jax.numpy as jnp
>>> from flax import nnx
>>> from flax import linen as nn
>>> from flax.nnx import bridge
>>> class LinenScale(nn.Module):
...   @nn.compact
...   def __call__(self, x):
...     return x * self.param('s', nn.initializers.ones, (x.shape[-1],))[None]
>>> model = bridge.ToNNX(LinenScale(), rngs=nnx.Rngs(0))
>>> model = bridge.lazy_init(model, jnp.ones((1, 2)))
>>> model.s.shape
(2,)
>>> class NNXScale(nnx.Module):
...   def __init__(self, n, *, rngs):
...     self.s = nnx.Param(jax.random.uniform(rngs.params(), (n,)))
...   def __call__(self, x):
...     return x * self.s[...][None]
>>> layer = bridge.to_linen(NNXScale, 2)
>>> variables = layer.init(jax.random.key(0), jnp.ones((1, 2)))
>>> jax.tree.map(jnp.shape, variables)
{'params': {'s': (2,)}}
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import typing as tp
from collections.abc import Mapping

import jax
from flax import linen
from flax.core import FrozenDict
from flax.nnx import graphlib, variablelib
from flax.nnx.bridge import variables as bv
from flax.nnx.bridge.module import _CONTEXT, _set_initializing
from flax.nnx.bridge.module import current_module
from flax.nnx.filterlib import Not
from flax.nnx.module import Module
from flax.nnx.pytreelib import Pytree, data
from flax.nnx.rnglib import Rngs, RngState
from flax.nnx.statelib import State
from flax.nnx.transforms.general import eval_shape
from flax.nnx.variablelib import Variable

__all__ = [
  'FrozenDict',
  'Functional',
  'Module',
  'Pytree',
  'Rngs',
  'State',
  'ToLinen',
  'ToNNX',
  'current_linen_module',
  'functional',
  'lazy_init',
  'linen_rngs_dict',
  'to_linen',
  'to_linen_class',
]

M = tp.TypeVar('M', bound=Module)


# -- lazy initialization ------------------------------------------------------


def lazy_init(fn: Module | tp.Callable[..., tp.Any], *args, **kwargs):
  """Runs ``fn(*args, **kwargs)`` so that every :class:`ToNNX` it calls
  (re)creates its variables from the inputs, and returns ``fn``.

  Args:
    fn: an NNX Module (the wrapper itself, or a Module that contains
      wrappers) or a method of one: a bound method, or a callable whose
      ``__self__`` is the Module (like ``to_nnx.method_name``).
    *args: sample inputs.
    **kwargs: sample keyword inputs.

  Raises:
    ValueError: if ``fn`` is neither an NNX Module nor one of its methods.
  """
  if isinstance(fn, Module):
    if not callable(fn):
      raise TypeError(
        f'{type(fn).__name__} has no __call__; pass the method to run, '
        'e.g. lazy_init(module.method, ...).'
      )
  elif not isinstance(getattr(fn, '__self__', None), Module):
    # a bound method, or a callable naming its Module in ``__self__`` (as
    # the Linen methods a ToNNX gives)
    raise ValueError(f'fn = {fn!r} needs to be a method of an NNX Module.')
  # Every Pytree of the Module's graph is marked initializing (its
  # ``_pytree__state.initializing``, which travels through split/merge and
  # transforms) for the call; objects created during it are not.
  module = fn if isinstance(fn, Module) else fn.__self__
  _set_initializing(module, True)
  try:
    fn(*args, **kwargs)
  finally:
    _set_initializing(module, False)
  return fn


# -- Linen inside NNX ---------------------------------------------------------


def _is_linen_var_attr(name: str, value: tp.Any) -> bool:
  if name.startswith('to_nnx__') or name.startswith('_pytree__'):
    return False
  return isinstance(value, (Variable, Mapping))


def _rngs_to_keys(rngs) -> dict[str, jax.Array]:
  if isinstance(rngs, Rngs):
    keys = {name: stream() for name, stream in rngs.items()}
  elif isinstance(rngs, Mapping):
    keys = dict(rngs)
  else:
    keys = {'params': rngs}
  if 'params' not in keys and 'default' in keys:
    keys['params'] = keys.pop('default')
  return keys


class ToNNX(Module):
  """An NNX Module that runs a Linen Module.

  Call :func:`lazy_init` (or :meth:`lazy_init`) once with sample inputs to
  create the variables; each top-level Linen variable name becomes an
  attribute holding a Variable (or a dict of them for a submodule). Calls
  then run ``module.apply`` with those variables.

  Args:
    module: the Linen Module to wrap.
    rngs: the :class:`~flax.nnx.Rngs` the Linen RNG streams are drawn from
      (each call draws one key per stream), or a single key used as the
      ``'params'`` stream.
  """

  _bridge_no_dataclass = True

  def __init__(
    self,
    module: linen.Module,
    rngs: Rngs | jax.Array | None = None,
  ):
    self.to_nnx__module = module
    if isinstance(rngs, Rngs):
      rngs = rngs.fork()
    elif rngs is not None:
      rngs = Rngs(params=rngs)
    self.to_nnx__rngs = rngs

  @property
  def module(self) -> linen.Module:
    """The wrapped Linen Module."""
    return self.to_nnx__module

  @property
  def rngs(self) -> Rngs | None:
    """The Rngs the Linen RNG streams are drawn from."""
    return self.to_nnx__rngs

  def lazy_init(self, *args, **kwargs):
    """Creates the variables by running the Linen ``init`` on sample inputs;
    returns this module."""
    return lazy_init(self, *args, **kwargs)

  def __getattr__(self, name: str):
    # Other methods of the wrapped Linen Module run like __call__ does: a
    # partial of __call__ with the Linen method, bound to this Module
    # (``__self__``) so that lazy_init takes it.
    module = vars(self).get('to_nnx__module')
    if not name.startswith('_') and module is not None:
      attr = getattr(type(module), name, None)
      if callable(attr) and not isinstance(attr, type):
        method = functools.partial(self.__call__, method=attr)
        method.__self__ = self
        return method
    raise AttributeError(
      f'{type(self).__name__!r} object has no attribute {name!r}'
    )

  def _linen_attrs(self) -> dict[str, tp.Any]:
    return {k: v for k, v in vars(self).items() if _is_linen_var_attr(k, v)}

  def __call__(
    self,
    *args: tp.Any,
    rngs: Rngs | jax.Array | None = None,
    method: tp.Callable[..., tp.Any] | str | None = None,
    mutable: tp.Any = None,
    **kwargs: tp.Any,
  ) -> tp.Any:
    """Runs the Linen Module on the inputs.

    Args:
      *args: positional inputs of the Linen method.
      rngs: keys for this call instead of the module's own Rngs.
      method: the Linen method to run (name or function); ``__call__`` by
        default.
      mutable: the Linen collections the call may change (as for
        ``Module.apply``); their new values are written into this module.
      **kwargs: keyword inputs of the Linen method.

    Returns:
      The output of the Linen method.
    """
    if rngs is None:
      rngs = self.to_nnx__rngs
    keys = {} if rngs is None else _rngs_to_keys(rngs)
    if method is None:
      method = '__call__'
    if self._pytree__state.initializing or _CONTEXT.initializing:
      # Initialization (lazy_init, or the init of a bridge Module this one
      # runs in) creates every collection, whatever ``mutable`` says.
      out, variables = self.to_nnx__module.init_with_output(
        keys, *args, method=method, **kwargs
      )
      self._write_linen_vars(variables)
      return out
    variables = bv.nnx_attrs_to_linen_vars(self._linen_attrs())
    if mutable is None:
      # Inside a bridge Module run by apply(), the collections it may change.
      parent = current_module()
      scope = None if parent is None else parent.scope
      mutable = False if scope is None else scope.mutable
    result = self.to_nnx__module.apply(
      variables, *args, rngs=keys, method=method, mutable=mutable, **kwargs
    )
    if mutable is False:
      return result
    out, updates = result
    self._write_linen_vars(updates)
    return out

  def _write_linen_vars(self, variables) -> None:
    new_attrs = bv.linen_vars_to_nnx_attrs(variables)
    for name, value in new_attrs.items():
      current = vars(self).get(name)
      setattr(self, name, data(_merge_attr(current, value)))


def _merge_attr(current, new):
  """Writes ``new`` (Variables, nested dicts) into ``current`` in place where
  both have the same structure, so that existing Variables keep their
  identity; returns what the attribute should hold."""
  if isinstance(new, Variable):
    if isinstance(current, Variable) and type(current) is type(new):
      current.set_value(new.get_value())
      return current
    return new
  if isinstance(current, dict):
    for key, value in new.items():
      current[key] = _merge_attr(current.get(key), value)
    return current
  return new


# -- NNX inside Linen ---------------------------------------------------------


def linen_rngs_dict(linen_module: linen.Module, add_default: bool = False):
  """One new key per RNG stream of ``linen_module``'s scope.

  Args:
    linen_module: a bound Linen Module.
    add_default: also give a ``'default'`` stream (seed 0) when the scope
      has none.
  """
  scope = linen_module.scope
  if scope is None:
    raise ValueError(
      'linen_rngs_dict needs a bound Linen Module; call it from inside '
      'init/apply.'
    )
  keys = {name: linen_module.make_rng(name) for name in scope.rngs}
  if add_default and 'default' not in keys:
    keys['default'] = 0
  return keys


def current_linen_module() -> linen.Module | None:
  """The :class:`ToLinen` whose NNX Module is running now, or None."""
  stack = _CONTEXT.linen_modules
  return stack[-1] if stack else None


@contextlib.contextmanager
def _running(linen_module):
  _CONTEXT.linen_modules.append(linen_module)
  try:
    yield
  finally:
    _CONTEXT.linen_modules.pop()


def _group_by_collection(module, metadata_fn) -> dict[str, dict]:
  """``{collection: nested dict}`` of ``module``'s Variables (RNG state is
  left out: it is rebuilt from the Linen streams on every call)."""
  out: dict[str, dict] = {}
  variables = graphlib.variables(module, Not(RngState))
  for path, var in variables.flat_state():
    col = variablelib.variable_name_from_type(type(var), allow_register=True)
    value = metadata_fn(var) if metadata_fn is not None else var.get_value()
    bv._set_nested(out.setdefault(col, {}), path, value)
  return out


def _lookup(tree, path):
  for key in path:
    if not isinstance(tree, Mapping) or key not in tree:
      return None
    tree = tree[key]
  return tree


def _load_linen_vars(module, linen_vars) -> None:
  """Writes the values of the Linen variables into ``module``'s Variables
  (matched by collection and path)."""
  attrs = bv.linen_vars_to_nnx_attrs(linen_vars)
  variables = graphlib.variables(module, Not(RngState))
  for path, var in variables.flat_state():
    new = _lookup(attrs, path)
    if isinstance(new, Variable) and isinstance(new, type(var)):
      var.set_value(new.get_value())


def _build_nnx(linen_module, keys):
  """Builds the NNX Module of a :class:`ToLinen` with Rngs made of ``keys``
  (module-level so Linen does not treat it as a Module method)."""
  kwargs = dict(linen_module.kwargs)
  if not linen_module.skip_rng:
    kwargs['rngs'] = Rngs(**keys)
  return linen_module.nnx_class(*linen_module.args, **kwargs)


def _nnx_method(module, nnx_method):
  if nnx_method is None:
    return module
  if isinstance(nnx_method, str):
    return getattr(module, nnx_method)
  return functools.partial(nnx_method, module)


class ToLinen(linen.Module):
  """A Linen Module that builds and runs an NNX Module.

  At ``init`` the NNX Module ``nnx_class(*args, **kwargs, rngs=...)`` is
  built with keys from the Linen RNG streams and its Variables are stored
  in Linen collections (``Param`` in ``'params'``, ``BatchStat`` in
  ``'batch_stats'``, ...; see :func:`flax.nnx.register_variable_name`).
  Other methods of the NNX class are reached as attributes:
  ``to_linen(nnx.Embed, 2, 3).attend(x)`` runs ``Embed.attend``.
  At ``apply`` the Module is rebuilt, takes the values of the Linen
  variables, runs, and its new values are written back to the collections
  that are mutable.

  Attributes:
    nnx_class: the NNX Module class (or any callable returning one).
    args: positional arguments of ``nnx_class``.
    kwargs: keyword arguments of ``nnx_class``.
    skip_rng: do not pass ``rngs=`` to ``nnx_class``.
    metadata_fn: converts each Variable to its Linen value (by default
      :func:`~flax.nnx.bridge.variables.to_linen_var`, which keeps
      metadata in an :class:`~flax.nnx.bridge.NNXMeta` box); None stores
      bare values.
  """

  nnx_class: tp.Callable[..., Module]
  args: tp.Sequence = ()
  kwargs: tp.Mapping[str, tp.Any] = FrozenDict({})
  skip_rng: bool = False
  metadata_fn: tp.Callable[[Variable], tp.Any] | None = bv.to_linen_var

  def __getattr__(self, name: str):
    # Attributes of the Linen Module first (fields set in setup), then the
    # methods of the NNX class: ``to_linen(nnx.Embed, ...).attend`` runs
    # __call__ with ``nnx_method=Embed.attend``. Hook-like names
    # (``__deepcopy__``, ``_repr_pretty_``) are not forwarded.
    try:
      return super().__getattr__(name)
    except AttributeError:
      pass
    nnx_class = vars(self).get('nnx_class')
    if not (name.startswith('_') and name.endswith('_')):
      method = getattr(nnx_class, name, None)
      if callable(method):
        return functools.partial(self.__call__, nnx_method=method)
    raise AttributeError(
      f'{type(self).__name__!r} object has no attribute {name!r}'
    )

  @linen.compact
  def __call__(
    self,
    *args,
    nnx_method: tp.Callable[..., tp.Any] | str | None = None,
    **kwargs,
  ):
    """Runs the NNX Module (its ``__call__``, or ``nnx_method``)."""
    if self.is_initializing():
      module = _build_nnx(self, linen_rngs_dict(self))
      for col, tree in _group_by_collection(module, self.metadata_fn).items():
        if self.is_mutable_collection(col):
          for name, value in tree.items():
            self.put_variable(col, name, value)
      with _running(self):
        return _nnx_method(module, nnx_method)(*args, **kwargs)

    keys = linen_rngs_dict(self, add_default=True)
    module = _build_nnx(self, keys)
    _load_linen_vars(module, self.variables)
    with _running(self):
      out = _nnx_method(module, nnx_method)(*args, **kwargs)
    for col, tree in _group_by_collection(module, self.metadata_fn).items():
      if self.is_mutable_collection(col):
        for name, value in tree.items():
          self.put_variable(col, name, value)
    return out


def to_linen(
  nnx_class: tp.Callable[..., Module],
  *args,
  metadata_fn: tp.Callable[[Variable], tp.Any] | None = bv.to_linen_var,
  name: str | None = None,
  skip_rng: bool = False,
  abstract_init: bool = True,
  **kwargs,
):
  """Shortcut for ``ToLinen(nnx_class, args, kwargs, ...)``.

  Args:
    nnx_class: the NNX Module class.
    *args: its positional arguments.
    metadata_fn: see :class:`ToLinen`.
    name: the Linen name of the wrapper.
    skip_rng: see :class:`ToLinen`.
    abstract_init: if False, ``nnx_class`` is checked to be callable with
      these arguments right away, by building it once with shapes only.
    **kwargs: its keyword arguments.
  """
  if not abstract_init:

    def build():
      kw = dict(kwargs)
      if not skip_rng:
        kw['rngs'] = Rngs(0)
      return nnx_class(*args, **kw)

    eval_shape(build)
  return ToLinen(
    nnx_class,
    args=args,
    kwargs=FrozenDict(kwargs),
    skip_rng=skip_rng,
    metadata_fn=metadata_fn,
    name=name,
  )


def to_linen_class(
  base_nnx_class: type[M],
  base_metadata_fn: tp.Callable[[Variable], tp.Any] | None = bv.to_linen_var,
  base_skip_rng: bool = False,
  **partial_kwargs: tp.Any,
) -> type[ToLinen]:
  """A :class:`ToLinen` subclass to derive Linen classes from.

  Subclasses of the returned class are built like the NNX class, with
  keyword arguments (merged over ``partial_kwargs``) and optional ``name``,
  ``skip_rng`` and ``metadata_fn``; the returned class itself is built like
  :class:`ToLinen`.
  """

  def partial_init(self, *args, **kwargs: tp.Any):
    if args or 'nnx_class' in kwargs:
      # Field by field, as Linen rebuilds a Module when cloning it.
      ToLinen.__init__(self, *args, **kwargs)
      return
    fields = {
      'skip_rng': kwargs.pop('skip_rng', base_skip_rng),
      'metadata_fn': kwargs.pop('metadata_fn', base_metadata_fn),
    }
    for key in ('name', 'parent'):
      if key in kwargs:
        fields[key] = kwargs.pop(key)
    ToLinen.__init__(
      self,
      base_nnx_class,
      kwargs=FrozenDict({**partial_kwargs, **kwargs}),
      **fields,
    )

  class ToLinenPartial(ToLinen):
    def __init_subclass__(cls, **kwargs):
      super().__init_subclass__(**kwargs)
      cls.__init__ = partial_init

  return ToLinenPartial


# -- functional NNX -----------------------------------------------------------


@dataclasses.dataclass
class Functional(tp.Generic[M]):
  """An NNX Module class with its arguments, used through pure ``init`` and
  ``apply`` functions of States.

  >>> import jax, jax.numpy as jnp
  >>> from flax import nnx
  >>> from flax.nnx import bridge
  >>> class Scale(nnx.Module):
  ...   def __init__(self, n, *, rngs):
  ...     self.s = nnx.Param(jax.random.uniform(rngs.params(), (n,)))
  ...   def __call__(self, x):
  ...     return x * self.s[...][None]
  >>> f = bridge.functional(Scale)(3)
  >>> state = f.init(rngs=nnx.Rngs(0))
  >>> y, (graphdef, state) = f.apply(state)(jnp.ones((1, 3)))
  >>> y.shape
  (1, 3)
  """

  module_type: type[M]
  graphdef: graphlib.GraphDef[M] | None
  args: tuple[tp.Any, ...]
  kwargs: dict[str, tp.Any]

  def init(self, *, rngs: Rngs | None = None) -> State:
    """Builds the Module and returns its State (keeps its GraphDef)."""
    kwargs = dict(self.kwargs)
    if rngs is not None:
      kwargs['rngs'] = rngs
    module = self.module_type(*self.args, **kwargs)
    graphdef, state = graphlib.split(module)
    self.graphdef = graphdef
    return state

  def apply(self, *states: tp.Any):
    """``nnx.call`` on the Module made of these States: calling a method of
    the result returns ``(out, (graphdef, new_state))``."""
    if self.graphdef is None:
      raise ValueError(
        f'Functional({self.module_type.__name__}) has no GraphDef yet; '
        'call init() first.'
      )
    return graphlib.call((self.graphdef, *states))


def functional(cls: type[M]) -> tp.Callable[..., Functional[M]]:
  """``functional(Cls)(*args, **kwargs)`` is ``Functional(Cls, None, args,
  kwargs)``."""

  def make(*args, **kwargs) -> Functional[M]:
    return Functional(cls, None, args, kwargs)

  return make
