"""Scope: the variables and PRNG streams of one node of a model.

A :class:`Scope` gives functional code stateful-looking access to a nested
variable dict (``{collection: {name: value or child dict}}``) and to named
PRNG streams. Child scopes (:meth:`Scope.push`) see the sub-dicts under
their name. :func:`init`, :func:`apply` and :func:`bind` turn a function of
a scope into a pure function of variables and keys:

>>> import jax, jax.numpy as jnp
>>> from flax.core import init, apply
>>> def f(scope, x):
...   w = scope.param('w', jax.nn.initializers.ones, (x.shape[-1], 2))
...   return x @ w
>>> y, variables = init(f)(jax.random.key(0), jnp.ones((1, 3)))
>>> variables['params']['w'].shape
(3, 2)
>>> apply(f)(variables, jnp.ones((1, 3))).tolist()
[[3.0, 3.0]]
"""

import collections
import contextlib
import functools
import itertools
from collections.abc import Callable, Mapping
from typing import Any, Generic, Optional, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from flax import errors
from flax.core import tracers
from flax.core._init_shapes import init_shapes
from flax.core._filters import CollectionFilter, DenyList, Filter
from flax.core._filters import PRNGSequenceFilter, filter_to_set
from flax.core._filters import group_collections, in_filter, is_filter_empty
from flax.core._filters import intersect_filters, subtract_filters
from flax.core._filters import union_filters
from flax.core._rng import (
  LazyRng,
  PRNGKey,
  _fold_in_static,
  is_valid_rng,
  is_valid_rngs,
)

__all__ = [
  'Array',
  'CollectionFilter',
  'DenyList',
  'Filter',
  'LazyRng',
  'PRNGSequenceFilter',
  'Scope',
  'Variable',
  'apply',
  'bind',
  'filter_to_set',
  'group_collections',
  'in_filter',
  'init',
  'intersect_filters',
  'is_filter_empty',
  'lazy_init',
  'subtract_filters',
  'union_filters',
]

T = TypeVar('T')
Array = jax.Array
VariableDict = Mapping[str, Any]
MutableVariableDict = dict


class _Sentinel:
  """A unique marker object with a readable repr."""

  def __init__(self, name: str):
    self._name = name

  def __repr__(self):
    return self._name

  def __reduce__(self):
    return (_sentinel_by_name, (self._name,))


# Key of a child's counters inside its parent's ``rng_counters`` dict.
child_rng_token = _Sentinel('child_rng_token')
_CHILD_RNG_TOKEN = child_rng_token
# Default of ``Scope.get_flag``: no default given.
no_flag = _Sentinel('no_flag')


def _sentinel_by_name(name):
  return {'child_rng_token': child_rng_token, 'no_flag': no_flag}[name]


# re-exported
_ = (_fold_in_static, filter_to_set, group_collections)
_ = (is_valid_rng, is_valid_rngs)
# The name Flax's tests use for the key check.
_is_valid_rng = is_valid_rng


def __getattr__(name):
  # Names Flax's scope module also offers, resolved lazily to keep imports
  # light: FrozenDict helpers, the id factory and the config object.
  if name in ('FrozenDict', 'freeze', 'unfreeze'):
    return getattr(_frozen_dict(), name)
  if name == 'uuid':
    from flax.ids import uuid

    return uuid
  if name == 'config':
    from flax import config

    return config
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def _frozen_dict():
  from flax.core import frozen_dict

  return frozen_dict


def _meta():
  from flax.core import meta

  return meta


def _unbox(value):
  # Arrays (the common case) hold no boxes: skip the tree walk.
  if isinstance(value, _ARRAY_TYPES):
    return value
  return _meta().unbox(value)


_ARRAY_TYPES = (jax.Array, np.ndarray, np.generic, float, int)
# Initializers that ignore their key (see ``Scope.param``).
_ZEROS = jax.nn.initializers.zeros
_ONES = jax.nn.initializers.ones


def _merge_into(target, key, value):
  """``target[key] = value``, but a mapping merges into an existing dict.

  Merging keeps the dicts that child scopes already hold shared.
  """
  current = target.get(key)
  if isinstance(current, dict) and isinstance(value, Mapping):
    for k, v in value.items():
      _merge_into(current, k, v)
  else:
    target[key] = value


class Variable(Generic[T]):
  """A handle to one variable of a scope, read and written via ``.value``.

  >>> import jax.numpy as jnp
  >>> from flax.core import Scope
  >>> scope = Scope({}, mutable=True)
  >>> count = scope.variable('counter', 'count', jnp.zeros, ())
  >>> count.value += 1
  >>> scope.variables()['counter']['count'].item()
  1.0

  Attributes:
    scope: the scope that owns the variable.
    collection: the collection it belongs to.
    name: its name inside the scope.
    unbox: whether ``.value`` strips metadata boxes (``AxisMetadata``).
  """

  def __init__(self, scope: 'Scope', collection: str, name: str, unbox: bool):
    self.scope, self.collection = scope, collection
    self.name, self.unbox = name, unbox

  @property
  def value(self) -> T:
    """The current value (unboxed when ``unbox`` is True)."""
    value = self.scope.get_variable(self.collection, self.name)
    return _unbox(value) if self.unbox else value

  @value.setter
  def value(self, value: T):
    if self.unbox:
      meta = _meta()
      current = self.scope.get_variable(self.collection, self.name)
      is_box = meta.is_axis_metadata
      cur_struct = jax.tree_util.tree_structure(current, is_leaf=is_box)
      new_struct = jax.tree_util.tree_structure(value, is_leaf=is_box)
      has_meta = any(
        map(is_box, jax.tree_util.tree_leaves(current, is_leaf=is_box))
      )
      if has_meta and cur_struct == new_struct:
        value = meta.replace_boxed(current, value)
    self.scope.put_variable(self.collection, self.name, value)

  def is_mutable(self) -> bool:
    """Returns whether the variable's collection is mutable."""
    return self.scope.is_mutable_collection(self.collection)

  def __repr__(self):
    return (
      f'Variable(collection={self.collection!r}, name={self.name!r}, '
      f'scope={self.scope.path_text!r})'
    )


class Scope:
  """Holds the variables and PRNG streams of one node of a model.

  Most users reach a scope through :func:`init`, :func:`apply` or
  :func:`bind`; Linen Modules hold one in ``module.scope``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import Scope
  >>> scope = Scope({}, rngs={'params': jax.random.key(0)}, mutable=True)
  >>> child = scope.push('dense')
  >>> w = child.param('kernel', jax.nn.initializers.zeros, (2, 3))
  >>> jax.tree_util.tree_map(jnp.shape, scope.variables())
  {'params': {'dense': {'kernel': (2, 3)}}}

  Args:
    variables: the variable dict of this scope (collection -> values).
    rngs: a mapping from stream names to PRNG keys (or ``LazyRng``).
    name: the name of this scope inside its parent.
    mutable: a collection filter of the collections that can be changed.
    parent: the parent scope, or None for a root scope.
    path: the names from the root to this scope.
    debug_path: like ``path`` with transform names, used in messages.
    flags: static flags visible to the whole tree (e.g. ``initializing``).
  """

  reservations: dict

  # Whether ``make_rng`` derives keys from ``rngs`` (a subclass that
  # overrides it sets this False, so constant initializers call it too).
  _keys_from_streams = True

  def __init__(
    self,
    variables: MutableVariableDict,
    rngs: Optional[Mapping[str, Any]] = None,
    name: Optional[str] = None,
    mutable: CollectionFilter = False,
    parent: Optional['Scope'] = None,
    path: tuple = (),
    debug_path: tuple = (),
    flags: Optional[Mapping] = None,
  ):
    self._variables, self.parent, self.name = variables, parent, name
    self.mutable = mutable
    self.flags = dict(flags) if flags else {}
    self.path = tuple(path)
    self.debug_path = tuple(debug_path) or self.path
    self._root = None if parent is None else parent.root
    self.trace_level = tracers.current_trace()
    self.rngs = {k: LazyRng.create(v) for k, v in rngs.items()} if rngs else {}
    # Draws made so far, per stream.
    self.rng_counters = dict.fromkeys(self.rngs, 0)
    self.reservations = collections.defaultdict(set)
    self._invalid = False

  def __repr__(self):
    return f'Scope(path={self.path_text!r}, mutable={self.mutable!r})'

  # A scope is a cursor into its root's variables with its own PRNG
  # counters: two scopes at one path of one tree that share the counters
  # (``push(name, reuse=True)`` twice, ``rewound()``) behave alike and are
  # equal, as in Flax 0.12.8. Lifted transforms rely on it to see that a
  # scope lies inside another one they lift.
  def __eq__(self, other) -> bool:
    if not isinstance(other, Scope):
      return False
    if self is other:
      return True
    return (
      self.root._variables is other.root._variables
      and self.path == other.path
      and self.rng_counters is other.rng_counters
    )

  def __hash__(self) -> int:
    return hash((id(self.root._variables), self.path, id(self.rng_counters)))

  # -- structure ------------------------------------------------------------

  @property
  def root(self) -> 'Scope':
    """The root scope of the tree."""
    return self._root if self._root is not None else self

  @property
  def path_text(self) -> str:
    """The debug path as text, e.g. ``'/Dense_0'`` (``'/'`` at the root)."""
    return '/' + '/'.join(str(p) for p in self.debug_path)

  @property
  def invalid(self) -> bool:
    """Whether the scope was invalidated and can no longer be used."""
    return self._invalid

  def invalidate(self) -> None:
    """Marks the scope as invalid; later use raises ``InvalidScopeError``."""
    self._invalid = True

  def _check_valid(self):
    if self._invalid:
      raise errors.InvalidScopeError(self.name)

  def _validate_trace_level(self):
    tracers.check_trace_level(self.trace_level)

  @contextlib.contextmanager
  def temporary(self):
    """A context manager that invalidates the scope when it exits.

    >>> from flax.core import Scope
    >>> with Scope({}).temporary() as scope:
    ...   pass
    >>> scope.invalid
    True
    """
    try:
      yield self
    finally:
      self.invalidate()

  def get_flag(self, key: str, default: Any = no_flag) -> Any:
    """Returns the value of the flag ``key`` or ``default``.

    As in Flax 0.12.8, a missing flag without a ``default`` gives back (not
    raises) a ``ValueError`` instance naming the flag.

    >>> from flax.core import Scope
    >>> scope = Scope({}, flags={'initializing': True})
    >>> scope.get_flag('initializing'), scope.get_flag('train', False)
    (True, False)
    """
    if key in self.flags:
      return self.flags[key]
    if default is no_flag:
      return ValueError(f'Flag {key} not present on scope.')
    return default

  def has_flag(self, key: str) -> bool:
    """Returns whether the flag ``key`` is set on this scope."""
    return key in self.flags

  def rewound(self, rewind_rngs: bool = False) -> 'Scope':
    """Returns a fresh scope over the same variables with no reservations.

    Args:
      rewind_rngs: if True the PRNG counters restart from zero; otherwise
        they are shared with this scope.
    """
    self._check_valid()
    # Positional: variables, rngs, name, mutable, parent, path, debug_path,
    # flags.
    scope = Scope(
      self._variables, self.rngs, self.name, self.mutable, self.parent,
      self.path, self.debug_path, self.flags,
    )  # fmt: skip
    if not rewind_rngs:
      scope.rng_counters = self.rng_counters
    return scope

  def default_name(self, prefix: str) -> str:
    """Returns the first free name ``f'{prefix}{i}'`` for ``i = 0, 1, ...``."""
    candidates = (f'{prefix}{i}' for i in itertools.count())
    return next(n for n in candidates if n not in self.reservations)

  def reserve(self, name: str, col: Optional[str] = None) -> None:
    """Reserves ``name`` in this scope (for collection ``col``).

    The same name may be used by variables of different collections; a
    child scope (``col=None``) conflicts with anything of the same name.

    Raises:
      TypeError: if ``name`` is not a string.
      ValueError: if the name is already in use.
    """
    if not isinstance(name, str):
      raise TypeError(
        f'The type of scope "{name}" should be string but it is {type(name)}'
      )
    if self.name_reserved(name, col):
      raise ValueError(f'Duplicate use of scope name: "{name}"')
    self.reservations[name].add(col)

  def name_reserved(self, name: str, col: Optional[str] = None) -> bool:
    """Returns whether ``name`` is already taken for collection ``col``.

    A name taken by a child scope, or asked for with ``col=None``, counts
    as taken for every collection.

    >>> from flax.core import Scope
    >>> scope = Scope({})
    >>> scope.reserve('kernel', 'params')
    >>> scope.name_reserved('kernel'), scope.name_reserved('kernel', 'cache')
    (True, False)
    """
    taken = self.reservations.get(name)
    if not taken:
      return False
    return col is None or None in taken or col in taken

  def child(
    self,
    fn: Callable[..., Any],
    name: Optional[str] = None,
    prefix: Optional[str] = None,
    named_call: bool = True,
    **partial_kwargs,
  ) -> Callable[..., Any]:
    """Wraps ``fn(scope, *args)`` so that it runs in a new child scope.

    The child is created now; every call of the returned function runs
    ``fn`` on a rewound copy of it (fresh name reservations, PRNG counters
    continuing), so calling it twice reuses the same variables.

    >>> import jax, jax.numpy as jnp
    >>> from flax.core import init
    >>> def dense(scope, x, features):
    ...   w = scope.param('kernel', jax.nn.initializers.ones, (2, features))
    ...   return x @ w
    >>> def mlp(scope, x):
    ...   h = scope.child(dense)(x, 2)
    ...   return scope.child(dense, 'out')(h, features=1)
    >>> y, variables = init(mlp)(jax.random.key(0), jnp.ones((1, 2)))
    >>> sorted(variables['params'])
    ['dense_0', 'out']

    Args:
      fn: the function to run; its first argument is the child scope.
      name: the child's name; by default ``prefix`` plus a counter.
      prefix: the prefix of an automatic name; by default ``fn``'s
        ``__name__`` followed by ``'_'`` (empty when it has none).
      named_call: when the ``flax_profile`` flag is on, run ``fn`` under a
        ``jax.named_scope`` of the child's name.
      **partial_kwargs: keyword arguments bound to every call of ``fn``.

    Returns:
      A function taking the remaining arguments of ``fn``.
    """
    if name is None and prefix is None:
      fn_name = getattr(fn, '__name__', None)
      prefix = f'{fn_name}_' if fn_name else ''
    scope = self.push(name, prefix=prefix or '')
    scope_name = scope.name

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
      kwargs = {**partial_kwargs, **kwargs}
      fresh = scope.rewound()
      if named_call and _profile_enabled():
        with jax.named_scope(scope_name):
          return fn(fresh, *args, **kwargs)
      return fn(fresh, *args, **kwargs)

    return wrapper

  def push(
    self, name: Optional[str] = None, prefix: str = '', reuse: bool = False
  ) -> 'Scope':
    """Creates a child scope.

    Args:
      name: the child's name; None picks ``default_name(prefix)``.
      prefix: the prefix of an automatic name.
      reuse: allow a name that is already reserved (re-entering a child).

    Returns:
      The child scope. Its PRNG streams get ``name`` appended to their
      suffix, and its PRNG counters are kept under ``name`` in this scope,
      so re-entering the child continues where it stopped.
    """
    self._check_valid()
    self._validate_trace_level()
    name = self.default_name(prefix) if name is None else name
    if not (reuse and name in self.reservations):
      self.reserve(name)
    rngs = {key: LazyRng.create(rng, name) for key, rng in self.rngs.items()}
    # The child's counters live here, so re-entering it continues them.
    slot = (_CHILD_RNG_TOKEN, name)
    if slot not in self.rng_counters:
      self.rng_counters[slot] = dict.fromkeys(rngs, 0)
    # Positional, in the order of Scope's parameters (see ``rewound``).
    child = Scope(
      {}, rngs, name, self.mutable, self,
      (*self.path, name), (*self.debug_path, name), self.flags,
    )  # fmt: skip
    child.rng_counters = self.rng_counters[slot]
    return child

  # -- collections ----------------------------------------------------------

  def _mutable_collection(self, col: str) -> dict:
    if col not in self._variables:
      if self.parent is not None:
        parent_col = self.parent._mutable_collection(col)
        if self.name not in parent_col:
          parent_col[self.name] = {}
        self._variables[col] = parent_col[self.name]
      else:
        self._variables[col] = {}
    return self._variables[col]

  def _collection(self, col: str) -> Mapping:
    if col not in self._variables:
      if self.parent is None:
        return {}
      parent_col = self.parent._collection(col)
      if self.name not in parent_col:
        return {}
      self._variables[col] = parent_col[self.name]
    return self._variables[col]

  def collection(self, col: str) -> Mapping:
    """Returns the dict of collection ``col`` at this scope (may be empty)."""
    self._check_valid()
    return self._collection(col)

  def _populate_collections(self):
    for col in list(self.root._variables.keys()):
      self._collection(col)

  def is_mutable_collection(self, col: str) -> bool:
    """Returns whether collection ``col`` can be changed."""
    return in_filter(self.root.mutable, col)

  def is_collection_empty(self, col: str) -> bool:
    """Returns whether the root has no variables in collection ``col``."""
    return not self.root._variables.get(col)

  def variables(self) -> VariableDict:
    """Returns the variables of this scope (``{collection: {...}}``)."""
    self._check_valid()
    self._populate_collections()
    return _maybe_freeze(self._variables)

  def mutable_variables(self) -> VariableDict:
    """Returns the variables of the mutable collections of this scope."""
    self._check_valid()
    self._populate_collections()
    xs = {
      k: v for k, v in self._variables.items() if in_filter(self.mutable, k)
    }
    return _maybe_freeze(xs)

  # -- variables ------------------------------------------------------------

  def has_variable(self, col: str, name: str) -> bool:
    """Returns whether variable ``name`` exists in collection ``col``."""
    return name in self._collection(col)

  def get_variable(self, col: str, name: str, default: Any = None) -> Any:
    """Returns the value of a variable, or ``default`` if it is missing."""
    self._check_valid()
    variables = self._collection(col)
    if name in variables:
      return variables[name]
    return default

  def put_variable(self, col: str, name: str, value: Any) -> None:
    """Sets the value of a variable, creating it if needed.

    Raises:
      ModifyScopeVariableError: if collection ``col`` is immutable.
    """
    self._check_valid()
    self._validate_trace_level()
    if not self.is_mutable_collection(col):
      raise errors.ModifyScopeVariableError(col, name, self.path_text)
    _merge_into(self._mutable_collection(col), name, value)

  def variable(
    self,
    col: str,
    name: str,
    init_fn: Optional[Callable] = None,
    *init_args,
    unbox: bool = True,
    **init_kwargs,
  ) -> Variable:
    """Declares a variable and returns a handle to it.

    If the variable does not exist yet it is created with
    ``init_fn(*init_args, **init_kwargs)`` (no implicit PRNG key).

    Raises:
      ScopeCollectionNotFound: missing, and the collection is empty.
      ScopeVariableNotFoundError: missing (immutable, or no init_fn).
    """
    self.reserve(name, col)
    if self.has_variable(col, name):
      return Variable(self, col, name, unbox=unbox)
    if init_fn is None or not self.is_mutable_collection(col):
      if self.is_collection_empty(col):
        raise errors.ScopeCollectionNotFound(col, name, self.path_text)
      raise errors.ScopeVariableNotFoundError(name, col, self.path_text)
    self.put_variable(col, name, init_fn(*init_args, **init_kwargs))
    return Variable(self, col, name, unbox=unbox)

  def param(
    self,
    name: str,
    init_fn: Callable,
    *init_args,
    unbox: bool = True,
    **init_kwargs,
  ) -> Any:
    """Declares a parameter (collection ``params``) and returns its value.

    A new parameter is created with
    ``init_fn(self.make_rng('params'), *init_args, **init_kwargs)``. For an
    existing one, the shape is checked against ``jax.eval_shape`` of the
    initializer.

    Raises:
      ScopeParamShapeError: the existing value has another shape.
      ScopeParamNotFoundError: missing and ``params`` is immutable.
      ScopeCollectionNotFound: ``params`` is immutable and empty.
    """
    self.reserve(name, 'params')
    if self.has_variable('params', name):
      value = self.get_variable('params', name)
      abs_shapes = init_shapes(init_fn, init_args, init_kwargs)
      leaves = jax.tree_util.tree_leaves(value)
      for val, abs_shape in zip(leaves, abs_shapes):
        if jnp.shape(val) != abs_shape:
          raise errors.ScopeParamShapeError(
            name, self.path_text, jnp.shape(val), abs_shape
          )
    else:
      if not self.is_mutable_collection('params'):
        if self.is_collection_empty('params'):
          raise errors.ScopeCollectionNotFound('params', name, self.path_text)
        raise errors.ScopeParamNotFoundError(name, self.path_text)
      if (init_fn is _ZEROS or init_fn is _ONES) and self._keys_from_streams:
        # These never read their key: advance the stream as ``make_rng``
        # does but skip deriving a key (the values are the same).
        stream = self.rngs[self._advance_rng('params')]
        value = init_fn(stream.rng, *init_args, **init_kwargs)
      else:
        value = init_fn(self.make_rng('params'), *init_args, **init_kwargs)
      self.put_variable('params', name, value)
    if unbox:
      value = _unbox(value)
    return value

  # -- rngs -----------------------------------------------------------------

  def has_rng(self, name: str) -> bool:
    """Returns whether the PRNG stream ``name`` is available."""
    return name in self.rngs

  def make_rng(self, name: str = 'params') -> PRNGKey:
    """Returns a new key from stream ``name`` (falls back to ``params``).

    Each call increments this scope's counter for the stream and folds the
    stream's suffix plus the counter into its root key.

    Raises:
      InvalidRngError: if neither ``name`` nor ``params`` is available.
    """
    name = self._advance_rng(name)
    rng = self.rngs[name]
    return _fold_in_static(rng.rng, (*rng.suffix, self.rng_counters[name]))

  def _advance_rng(self, name: str) -> str:
    # Counts one more key of stream ``name`` (or of ``params``, its
    # fallback) and returns the name of the stream used.
    if name not in self.rngs:
      if 'params' not in self.rngs:
        raise errors.InvalidRngError(f'{self.name} needs PRNG for "{name}"')
      name = 'params'
    self._check_valid()
    self._validate_trace_level()
    self.rng_counters[name] += 1
    return name


def _profile_enabled() -> bool:
  from flax import config

  return config.flax_profile


def _maybe_freeze(xs):
  from flax import config

  if config.flax_return_frozendict:
    return _frozen_dict().freeze(xs)
  return xs


# The entry points that build root scopes (bind/apply/init) live in their
# own module; re-exported here, where Flax users import them from.
from flax.core._scope_entry import (  # noqa: E402
  _check_rngs as _check_rngs,
  _is_valid_variables as _is_valid_variables,
  apply as apply,
  bind as bind,
  init as init,
  lazy_init as lazy_init,
)
