"""Moving graph nodes through pytree-only code: ``to_tree`` replaces every
graph node of a pytree by a :class:`NodeStates` (its GraphDef and States,
shared references kept), ``from_tree`` rebuilds them; ``prefix`` maps the
Variables of a tree to prefix values; small tuple helpers used by
transforms.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class M(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(1))
>>> m = M()
>>> tree = nnx.to_tree((m, m, 1))
>>> type(tree[0]).__name__
'NodeStates'
>>> a, b, c = nnx.from_tree(tree)
>>> a is b, c
(True, 1)
"""

from flax.nnx.graphops import IndexMap, unflatten
from flax.nnx._common import resolve_graph
from flax.nnx.graphwalk import iter_graph
import dataclasses
import typing as tp
from collections import OrderedDict as OrderedDict

import jax

from flax import struct
from flax.nnx import filterlib
from flax.nnx._extract_prefix import ExtractIndex as ExtractIndex
from flax.nnx._extract_prefix import PrefixMapping as PrefixMapping
from flax.nnx._extract_prefix import broadcast_prefix2 as broadcast_prefix2
from flax.nnx._extract_prefix import (
  broadcast_prefix_map as broadcast_prefix_map,
)
from flax.nnx._extract_prefix import (
  clear_non_graph_nodes as clear_non_graph_nodes,
)
from flax.nnx._extract_prefix import copy_var_structure as copy_var_structure
from flax.nnx._extract_prefix import extract as extract
from flax.nnx._extract_prefix import filter_kwargs as filter_kwargs
from flax.nnx._extract_prefix import insert as insert
from flax.nnx._extract_prefix import labeled as labeled
from flax.nnx._extract_prefix import treemap_copy_args as treemap_copy_args
from flax.nnx._extract_updates import Updates as Updates
from flax.nnx._extract_updates import apply_updates as apply_updates
from flax.nnx._extract_updates import (
  check_consistent_aliasing2 as check_consistent_aliasing2,
)
from flax.nnx._extract_updates import check_no_aliases as check_no_aliases
from flax.nnx._extract_updates import check_prefix as check_prefix
from flax.nnx._extract_updates import (
  check_same_variables as check_same_variables,
)
from flax.nnx._extract_updates import get_updates as get_updates
from flax.nnx._extract_updates import snapshot as snapshot
from flax.nnx._extract_updates import to_masked as to_masked
from flax.nnx._extract_updates import (
  update_carry_variables as update_carry_variables,
)
from flax.nnx._extract_updates import variable_changed as variable_changed
from flax.nnx.graphctx import merge_context, split_context
from flax.nnx.graphlib import GraphDef
from flax.nnx.pytreelib import Pytree as Pytree
from flax.nnx.statelib import State as State
from flax.nnx.variablelib import Variable
from flax.typing import Missing as Missing

A = tp.TypeVar('A')


class Mask(tuple):
  """Stands for an element taken out of a tuple (see :func:`mask_at`)."""

  def __repr__(self):
    return 'Mask()'


@dataclasses.dataclass(frozen=True)
class Opaque(tp.Generic[A]):
  """Wraps a value so that pytree code treats it as static and compares
  it by identity."""

  value: A

  def __eq__(self, other):
    return isinstance(other, Opaque) and self.value is other.value

  def __hash__(self):
    return id(self.value)


class NodeStates(struct.PyTreeNode):
  """A graph node as pytree data: its GraphDef (may be None) and its
  States (the leaves), with optional static ``metadata``.

  The GraphDef is a child without leaves, so a prefix (e.g. the
  ``in_axes`` of a ``jax.vmap``) may hold None in its place: a prefix
  NodeStates made by :meth:`from_prefixes` with the same ``metadata``
  matches any NodeStates.
  """

  _graphdef: GraphDef | None
  states: tuple[tp.Any, ...]
  metadata: tp.Any = struct.field(pytree_node=False)

  @property
  def graphdef(self) -> GraphDef:
    if self._graphdef is None:
      raise ValueError('No graphdef available')
    return self._graphdef

  @property
  def state(self):
    if len(self.states) != 1:
      raise ValueError(
        f'Expected exactly one state, got {len(self.states)}; use .states.'
      )
    return self.states[0]

  @classmethod
  def from_split(cls, graphdef, state, /, *states, metadata=None):
    return cls(_graphdef=graphdef, states=(state, *states), metadata=metadata)

  @classmethod
  def from_states(cls, state, *states):
    return cls(_graphdef=None, states=(state, *states), metadata=None)

  @classmethod
  def from_prefixes(cls, prefixes, /, *, metadata=None):
    return cls(_graphdef=None, states=tuple(prefixes), metadata=metadata)


class GraphDefState(struct.PyTreeNode):
  """A GraphDef (static) with one State."""

  graphdef: GraphDef = struct.field(pytree_node=False)
  state: State


class TreeState(struct.PyTreeNode):
  """A graph node's GraphDef (static) with a state-shaped tree (e.g. the
  prefixes of its Variables)."""

  graphdef: GraphDef | None = struct.field(pytree_node=False)
  __state__: tp.Any
  prefix_fn: Opaque = struct.field(pytree_node=False, default=Opaque(None))

  @property
  def state(self):
    return self.__state__


def is_tree_node(x) -> bool:
  """Whether ``x`` is a :class:`NodeStates` (a node ``to_tree`` made)."""
  return isinstance(x, NodeStates)


def _is_graph_node(x) -> bool:
  return isinstance(x, (Pytree, Variable))


def default_split_fn(ctx, path, prefix, leaf):
  """Splits ``leaf`` in ``ctx`` into a :class:`NodeStates`."""
  return NodeStates.from_split(*ctx.split(leaf))


def merge_tree_node(ctx, path, prefix, leaf):
  """Rebuilds the node of a :class:`NodeStates` in ``ctx``."""
  if not isinstance(leaf, NodeStates):
    raise ValueError(f'Expected a NodeStates at {path}, got {type(leaf)}')
  return ctx.merge(leaf.graphdef, *leaf.states)


def broadcast_prefix(
  prefix_tree, full_tree, prefix_is_leaf=None, tree_is_leaf=None
) -> list:
  """The value of ``prefix_tree`` for every leaf of ``full_tree`` (a
  prefix leaf covers a whole subtree).

  >>> from flax.nnx import extract
  >>> extract.broadcast_prefix((0, None), ([1, 2], 3))
  [0, 0, None]
  """
  out: list = []

  def add(prefix, subtree):
    n = len(jax.tree_util.tree_leaves(subtree, is_leaf=tree_is_leaf))
    out.extend([prefix] * n)

  def is_prefix_leaf(x):
    # None is a prefix for a whole subtree, not an empty node.
    return x is None or (prefix_is_leaf is not None and prefix_is_leaf(x))

  jax.tree_util.tree_map(add, prefix_tree, full_tree, is_leaf=is_prefix_leaf)
  return out


def check_consistent_aliasing(node, prefix, /, *, node_prefixes=None):
  """Raises a ValueError if an object of ``node`` is reached under
  different prefixes (collected in ``node_prefixes`` across calls)."""
  if node_prefixes is None:
    node_prefixes = {}

  for path, value in iter_graph(node):
    if isinstance(value, Variable):
      node_prefixes.setdefault(id(value), []).append((path, prefix, value))
  lines = []
  for entries in node_prefixes.values():
    prefixes = {repr(p) for _, p, _ in entries}
    if len(prefixes) > 1:
      lines.append(f'Node: {type(entries[0][2]).__name__}')
      lines.extend(
        f'  {"/".join(map(str, path))}: {p!r}' for path, p, _ in entries
      )
  if lines:
    raise ValueError(
      'Inconsistent aliasing detected. The following nodes have different '
      'prefixes:\n' + '\n'.join(lines)
    )


def to_tree(
  tree,
  /,
  *,
  prefix=Missing,
  split_fn=default_split_fn,
  map_non_graph_nodes: bool = False,
  ctxtag=None,
  check_aliasing: bool = True,
):
  """Replaces every graph node of ``tree`` by ``split_fn(ctx, path, prefix,
  node)`` (a :class:`NodeStates` by default), splitting in one split context
  so that shared objects stay shared. ``map_non_graph_nodes`` applies
  ``split_fn`` to the other leaves too."""
  leaves_with_paths, treedef = jax.tree_util.tree_flatten_with_path(
    tree, is_leaf=_is_graph_node
  )
  if prefix is Missing or prefix is None:
    prefixes = [prefix] * len(leaves_with_paths)
  else:
    prefixes = broadcast_prefix(prefix, tree, tree_is_leaf=_is_graph_node)
  if check_aliasing and prefix is not Missing:
    node_prefixes: dict = {}
    for (_, leaf), p in zip(leaves_with_paths, prefixes):
      if _is_graph_node(leaf):
        check_consistent_aliasing(leaf, p, node_prefixes=node_prefixes)
  out = []
  with split_context(ctxtag) as ctx:
    for (path, leaf), p in zip(leaves_with_paths, prefixes):
      nnx_path = tuple(_key(k) for k in path)
      if _is_graph_node(leaf) or map_non_graph_nodes:
        leaf = split_fn(ctx, nnx_path, p, leaf)
      out.append(leaf)
  return treedef.unflatten(out)


def from_tree(
  tree,
  /,
  *,
  prefix=Missing,
  merge_fn=merge_tree_node,
  is_node_leaf=is_tree_node,
  is_leaf=is_tree_node,
  map_non_graph_nodes: bool = False,
  is_inner=None,
  ctxtag=None,
):
  """Rebuilds the graph nodes that :func:`to_tree` replaced, in one merge
  context (shared objects come back shared)."""
  leaves_with_paths, treedef = jax.tree_util.tree_flatten_with_path(
    tree, is_leaf=is_leaf
  )
  if prefix is Missing or prefix is None:
    prefixes = [prefix] * len(leaves_with_paths)
  else:
    prefixes = broadcast_prefix(prefix, tree, tree_is_leaf=is_leaf)
  out = []
  with merge_context(ctxtag, is_inner) as ctx:
    for (path, leaf), p in zip(leaves_with_paths, prefixes):
      nnx_path = tuple(_key(k) for k in path)
      if is_node_leaf(leaf) or map_non_graph_nodes:
        leaf = merge_fn(ctx, nnx_path, p, leaf)
      out.append(leaf)
  return treedef.unflatten(out)


def _key(entry):
  for attr in ('key', 'idx', 'name'):
    if hasattr(entry, attr):
      return getattr(entry, attr)
  return str(entry)


def prefix(node, filter_map, /, *, graph=None):
  """A prefix tree for ``node``. In graph mode every graph node becomes a
  :class:`TreeState` whose state maps each Variable path to its prefix,
  other leaves their prefix. In tree mode (``graph=False``) the result has
  the shape of ``node`` itself: copies of its graph nodes whose Variables
  (and other leaves) are replaced by their prefixes, e.g. a Module whose
  attributes hold the axes.

  ``filter_map`` maps filters to prefixes (the first matching filter wins;
  a Variable no filter matches is a ValueError), or is a function
  ``(path, value) -> prefix``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(1))
  ...     self.n = nnx.BatchStat(jnp.zeros(1))
  >>> nnx.prefix(M(), {nnx.Param: 0, ...: None}).state
  State({
    'n': None,
    'w': 0
  })
  """
  if callable(filter_map) and not isinstance(filter_map, tp.Mapping):
    prefix_fn = filter_map
  else:
    items = list(filter_map.items())
    predicates = filterlib.filters_to_predicates(tuple(f for f, _ in items))

    def prefix_fn(path, x):
      for pred, (_, value) in zip(predicates, items):
        if pred(path, x):
          return value
      raise ValueError(
        f'No filter matched leaf at path {path!r} with value {x!r}; the '
        f'filters are {list(filter_map)!r}.'
      )

  if not resolve_graph(graph):
    # the node's own pytree, each Variable a leaf
    return jax.tree_util.tree_map_with_path(
      lambda path, x: prefix_fn(tuple(map(_key, path)), x),
      node,
      is_leaf=lambda x: isinstance(x, Variable),
    )
  leaves_with_paths, treedef = jax.tree_util.tree_flatten_with_path(
    node, is_leaf=_is_graph_node
  )
  out = []
  # one split context: a graph node reached again (shared) gets the
  # TreeState of a reference, with an empty state
  with split_context() as ctx:
    for path, leaf in leaves_with_paths:
      nnx_path = tuple(_key(k) for k in path)
      if _is_graph_node(leaf):
        graphdef, state = ctx.split(leaf)
        if isinstance(state, Variable):  # a Variable root: its own prefix
          mapped = prefix_fn(nnx_path, state)
        else:
          mapped = state.map(
            lambda p, v, base=nnx_path: prefix_fn(base + tuple(p), v)
          )
        leaf = TreeState(graphdef, mapped, Opaque(prefix_fn))
      else:
        leaf = prefix_fn(nnx_path, leaf)
      out.append(leaf)
  return treedef.unflatten(out)


def to_tree2(
  tree,
  /,
  *,
  prefix: tp.Any = Missing,
  check_aliasing: bool = True,
  prefix_fn: tp.Callable[[tuple, tp.Any], tp.Any] | None = None,
) -> tp.Any:
  """Replaces every graph node of ``tree`` by a :class:`TreeState` (its
  GraphDef and State, split in one context so that objects met before are
  references), keeping ``prefix_fn`` with it. With ``prefix`` (a prefix of
  ``tree``) and ``check_aliasing``, a Variable reached under two different
  prefixes is a ValueError.

  >>> from flax import nnx
  >>> from flax.nnx import extract
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(1))
  >>> m = M()
  >>> tree = extract.to_tree2((m, m.w, 3))
  >>> [type(x).__name__ for x in tree]
  ['TreeState', 'TreeState', 'int']
  >>> a, w, n = extract.from_tree2(tree)
  >>> a.w is m.w, w is a.w, n
  (True, True, 3)
  """
  leaves, treedef = jax.tree_util.tree_flatten_with_path(
    tree, is_leaf=_is_graph_node
  )
  if check_aliasing and prefix is not Missing:
    _, prefixes = broadcast_prefix2(prefix, tree, is_leaf=_is_graph_node)
    node_prefixes: dict = {}
    for (path, leaf), p in zip(leaves, prefixes):
      if _is_graph_node(leaf):
        check_consistent_aliasing2(
          leaf,
          p,
          base_path=tuple(_key(k) for k in path),
          node_prefixes=node_prefixes,
        )
  out = []
  with split_context() as ctx:
    for _, leaf in leaves:
      if _is_graph_node(leaf):
        graphdef, state = ctx.split(leaf)
        leaf = TreeState(graphdef, state, Opaque(prefix_fn))
      out.append(leaf)
  return treedef.unflatten(out)


def from_tree2(tree: tp.Any, /, recreate_variables: bool = True) -> tp.Any:
  """Rebuilds the graph nodes that :func:`to_tree2` replaced, sharing one
  index so that references resolve; the Variables of the States are used
  as they are (plain values are wrapped in new Variables when
  ``recreate_variables``)."""

  index_ref = IndexMap()

  def merge(x):
    if not isinstance(x, TreeState):
      return x
    return unflatten(
      x.graphdef,
      x.state,
      index_ref=index_ref,
      recreate_variables=recreate_variables,
    )

  return jax.tree_util.tree_map(
    merge, tree, is_leaf=lambda x: isinstance(x, TreeState)
  )


def find(t: tuple, value) -> int | None:
  """The index of the first element of ``t`` that is ``value`` (None if
  none is)."""
  for i, x in enumerate(t):
    if x is value:
      return i
  return None


def mask_at(t: tuple, index: int | None) -> tuple:
  """``(t[index], t with a Mask() there)``; ``(None, t)`` for None."""
  if index is None:
    return None, t
  return t[index], replace_at(t, index, Mask())


def replace_at(t: tuple, index: int | None, value) -> tuple:
  """``t`` with ``value`` at ``index`` (``t`` itself for None)."""
  if index is None:
    return t
  return (*t[:index], value, *t[index + 1 :])


def slice_at(t: tuple, index: int | None) -> tuple:
  """``(t[index], t without that element)``; ``(None, t)`` for None."""
  if index is None:
    return None, t
  return t[index], (*t[:index], *t[index + 1 :])
