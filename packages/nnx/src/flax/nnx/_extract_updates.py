"""Variable updates of pytree-only (tree-mode) code, and its checks
(re-exported by :mod:`flax.nnx.extract`).

Code that treats Modules as plain JAX pytrees takes a :func:`snapshot` of
its inputs, runs, then collects the Variables that changed with
:func:`get_updates` (one :class:`Updates` per prefix, e.g. per axis) and
writes them back with :func:`apply_updates`.

>>> from flax import nnx
>>> from flax.nnx import extract
>>> import jax.numpy as jnp
>>> tree = [nnx.Param(jnp.ones(2)), nnx.BatchStat(jnp.zeros(1))]
>>> current, before = extract.snapshot(tree)
>>> current[0][...] = jnp.zeros(2)
>>> [updates] = extract.get_updates(current, before)
>>> updates.paths
[(SequenceKey(idx=0),)]
"""

from flax.nnx.graphwalk import iter_graph
from flax.nnx.transforms.engine.types import DiffState, StateAxes
from flax.nnx.transforms.engine.treemode import check_tree_mode_args
from flax.nnx.transforms.engine.varflow import duplicate_message
import dataclasses
import typing as tp

import jax

from flax.nnx._extract_prefix import (
  PrefixMapping,
  broadcast_prefix2,
  copy_var_structure,
  labeled,
)
from flax.nnx.variablelib import Variable

A = tp.TypeVar('A')


def _is_variable(x) -> bool:
  return isinstance(x, Variable)


def _is_none(x) -> bool:
  return x is None


@dataclasses.dataclass
class Updates(tp.Sequence):
  """Changed Variables by key path: a sequence of ``(path, Variable)``
  pairs; indexing with a path (a tuple) returns its Variable.

  >>> from flax import nnx
  >>> from flax.nnx import extract
  >>> import jax, jax.numpy as jnp
  >>> key = (jax.tree_util.GetAttrKey('w'),)
  >>> u = extract.Updates.create([(key, nnx.Param(jnp.ones(1)))])
  >>> len(u), u[0][0] == key, type(u[key]).__name__
  (1, True, 'Param')
  """

  _keys: list = dataclasses.field(default_factory=list)
  _values: list = dataclasses.field(default_factory=list)

  @classmethod
  def create(cls, items: tp.Iterable[tuple[tuple, Variable]] = ()) -> 'Updates':
    """Updates holding the ``(path, Variable)`` pairs of ``items``."""
    out = cls()
    for path, value in items:
      out.append(path, value)
    return out

  def append(self, key: tp.Any, value: Variable):
    """Adds the Variable ``value`` found at path ``key``."""
    self._keys.append(key)
    self._values.append(value)

  # The recorded paths and Variables, in the order they were added.
  paths = property(lambda self: self._keys)
  leaves = property(lambda self: self._values)

  def __getitem__(self, key):
    if isinstance(key, slice):
      raise NotImplementedError('Slicing is not supported for Updates.')
    if isinstance(key, tuple):
      for k, v in zip(self._keys, self._values):
        if k == key:
          return v
      raise KeyError(key)
    return self._keys[key], self._values[key]

  def __iter__(self):
    return iter(zip(self._keys, self._values))

  def __len__(self):
    return len(self._keys)


def variable_changed(post: Variable, pre: Variable) -> bool:
  """Whether ``post`` differs from the snapshot ``pre``: another type,
  another value object or other metadata.

  >>> from flax import nnx
  >>> from flax.nnx import extract
  >>> import jax.numpy as jnp
  >>> p = nnx.Param(jnp.ones(1))
  >>> extract.variable_changed(p.copy(), p)
  False
  >>> extract.variable_changed(p.copy(jnp.ones(1)), p)
  True
  """
  return (
    type(post) is not type(pre)
    or post.get_raw_value() is not pre.get_raw_value()
    or post.get_metadata() != pre.get_metadata()
  )


def snapshot(args: A) -> tuple[A, A]:
  """``(copy of the structure of args, copy with copied Variables)``: run
  code on the first, compare it with the second (:func:`get_updates`)."""
  current = copy_var_structure(args)
  before = jax.tree_util.tree_map(
    lambda x: x.copy() if isinstance(x, Variable) else x,
    args,
    is_leaf=_is_variable,
  )
  return current, before


def get_updates(
  current_tree: A,
  snapshot_tree: A,
  *,
  prefix: tp.Any = None,
  keep_fn: tp.Callable[[tuple, tp.Any, Variable, Variable], bool] | None = None,
  known_prefixes: tp.Iterable[tp.Any] = (None,),
):
  """The Variables of ``current_tree`` that changed against
  ``snapshot_tree`` (or for which ``keep_fn(path, prefix, current,
  before)`` is true), as one :class:`Updates` per prefix of
  ``known_prefixes``. ``prefix`` is a prefix of the trees (a
  :class:`PrefixMapping` leaf resolves per Variable); a Variable whose
  prefix is not known is a KeyError."""
  known = list(known_prefixes)
  out = [Updates() for _ in known]
  leaves, treedef = jax.tree_util.tree_flatten_with_path(
    current_tree, is_leaf=_is_variable
  )
  before = treedef.flatten_up_to(snapshot_tree)
  _, prefixes = broadcast_prefix2(
    prefix, current_tree, is_leaf=_is_variable, prefix_leaf=_is_none
  )
  for (path, cur), pre, p in zip(leaves, before, prefixes):
    if not isinstance(cur, Variable):
      continue
    if isinstance(p, PrefixMapping):
      p = p.map_prefix(path, cur)
    if variable_changed(cur, pre) or (
      keep_fn is not None and keep_fn(path, p, cur, pre)
    ):
      try:
        i = known.index(p)
      except ValueError:
        raise KeyError(p) from None
      out[i].append(path, cur)
  return out


def apply_updates(variables: dict, updates: list) -> None:
  """Writes every :class:`Updates` of ``updates`` into ``variables``
  (path -> Variable): value and metadata. A path not in ``variables`` is a
  RuntimeError."""
  for group in updates:
    for path, new in group:
      target = variables.get(path)
      if target is None:
        raise RuntimeError(
          f'apply_updates: no Variable at path {jax.tree_util.keystr(path)} '
          f'for the update {new!r}.'
        )
      target.update_from_state(new)


def to_masked(tree, all_updates: list):
  """The masked form of ``tree``: every Variable an empty copy (value
  None), every other leaf None. Changed Variables (``all_updates``, a list
  of :class:`Updates`) travel in their updates and unchanged ones need not
  travel, so all of them are masked."""
  for group in all_updates:
    if not isinstance(group, Updates):
      raise TypeError(
        f'to_masked expects a list of Updates, got {type(group).__name__}.'
      )
  return jax.tree_util.tree_map(
    lambda x: (
      x.copy(None, _copy_ref=False) if isinstance(x, Variable) else None
    ),
    tree,
    is_leaf=_is_variable,
  )


def update_carry_variables(init_val, val_out):
  """Writes the values of the Variables of a loop's output carry
  ``val_out`` into those of its input carry ``init_val``; returns the
  carry with the input Variables and the other output leaves."""
  leaves, treedef = jax.tree_util.tree_flatten_with_path(
    init_val, is_leaf=_is_variable
  )
  outs = treedef.flatten_up_to(val_out)
  result = []
  for (path, x), y in zip(leaves, outs):
    if isinstance(x, Variable):
      if not isinstance(y, Variable):
        raise AttributeError(
          f'update_carry_variables: the carry output at '
          f'{jax.tree_util.keystr(path)} is a {type(y).__name__}, where the '
          f'carry input holds a {type(x).__name__}.'
        )
      x.set_raw_value(y.get_raw_value(), _unsafe_bypass_check=True)
      result.append(x)
    else:
      result.append(y)
  return treedef.unflatten(result)


def check_same_variables(inputs, outputs, transform_name: str = ''):
  """Raises a ValueError unless ``outputs`` holds the very Variables of
  ``inputs`` at the same places (loop carries)."""

  def check(x, y):
    if (isinstance(x, Variable) or isinstance(y, Variable)) and x is not y:
      raise ValueError(
        f'{transform_name} Variable identity must be preserved across '
        'iterations: return the carried Variables themselves, not new '
        'ones.'.lstrip()
      )

  jax.tree_util.tree_map(check, inputs, outputs, is_leaf=_is_variable)


def check_no_aliases(
  fn_name: str, /, *, check: tp.Iterable[str] = (), **kwargs
):
  """The Variables of ``kwargs`` by key path (``.name`` then the path
  inside, Modules read as pytrees); a Variable found at two paths raises
  the duplicate error of transforms without graph updates.

  ``check`` must be empty: restricting the check to some arguments is not
  supported.
  """

  if tuple(check):
    raise ValueError(
      'check_no_aliases: restricting the check to some arguments (`check`) '
      'is not supported; every argument is checked.'
    )
  found: dict = {}
  first: dict = {}
  leaves, _ = jax.tree_util.tree_flatten_with_path(
    labeled(**kwargs), is_leaf=_is_variable
  )
  for path, x in leaves:
    if not isinstance(x, Variable):
      continue
    seen = first.get(id(x))
    if seen is not None:
      raise ValueError(
        duplicate_message(
          x,
          [jax.tree_util.keystr(seen), jax.tree_util.keystr(path)],
          f'nnx.{fn_name}',
        )
      )
    first[id(x)] = path
    found[path] = x
  return found


def check_prefix(
  prefix,
  prefix_name: str,
  fn_name,
  graph: bool,
  graph_updates: bool,
  none_leaf=True,
):
  """The distinct leaves of ``prefix`` (e.g. the ``known_prefixes`` of
  :func:`get_updates`), None last when ``none_leaf`` and ``prefix`` holds
  a None; a ``StateAxes``/``DiffState`` among them is a ValueError unless
  both ``graph`` and ``graph_updates`` are on."""

  if not (graph and graph_updates):
    try:
      check_tree_mode_args(prefix, name=f'nnx.{fn_name}')
    except ValueError as e:
      raise ValueError(f'`{prefix_name}`: {e}') from None

  def is_leaf(x):
    return isinstance(x, (StateAxes, DiffState)) or x is None

  out: list = []
  has_none = False
  for leaf in jax.tree_util.tree_leaves(prefix, is_leaf=is_leaf):
    if leaf is None:
      has_none = True
    elif leaf not in out:
      out.append(leaf)
  if none_leaf and has_none:
    out.append(None)
  return out


def check_consistent_aliasing2(
  node: tp.Any,
  prefix: tp.Any,
  /,
  *,
  base_path: tuple = (),
  node_prefixes: dict,
):
  """Records the prefix of every Variable of ``node`` (by id, with its
  path under ``base_path``) in ``node_prefixes``; a Variable recorded with
  another prefix before is a ValueError listing both."""

  for path, value in iter_graph(node):
    if not isinstance(value, Variable):
      continue
    entries = node_prefixes.setdefault(id(value), [])
    entries.append((base_path + path, prefix))
    if any(p != prefix for _, p in entries[:-1]):
      lines = '\n'.join(
        f'  {"/".join(map(str, path))}: {p!r}' for path, p in entries
      )
      raise ValueError(
        'Inconsistent aliasing detected. The following nodes have different '
        f'prefixes:\nNode: {type(value).__name__}\n{lines}'
      )
