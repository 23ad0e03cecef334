"""The core of the NNX graph: :class:`GraphDef`, the cached flat view of a
root, and ``split`` / ``state`` / ``graphdef`` / ``merge`` (whose public
home is :mod:`flax.nnx.graphlib`, the graph floor's API).

Structural work happens once per graph structure: every Pytree root keeps
a cached *flat view* (graphdef, ordered leaves, paths) that stays valid
until an attribute of one of its nodes is set or deleted (or Variable
metadata changes). ``split`` / ``state`` / ``update`` on an unchanged graph
only read or write the leaves.
"""

from flax.nnx import proxy_caller
from flax.nnx.graphnodes import GenericPytree, LeafAttr, NodeDef
from flax.nnx.graphnodes import LEAF_ATTR, NODE_ATTR, NodeRef, Static
from flax.nnx.graphnodes import TreeNodeDef, VariableDef
from flax.nnx.flattenlib import _EMPTY_META, _Meta, _Static
from flax.nnx.variablelib import _REQUIRED_DEFAULTS
from flax.typing import HashableMapping
import collections
from collections.abc import MutableMapping
import itertools
import operator
import types
import typing as tp
import weakref

import jax

from flax.nnx import filterlib, rebuildlib, reprlib, statelib
from flax.nnx._common import EPOCH, META_EPOCH, graph_mode_default
from flax.nnx.flattenlib import (
  container_snapshot,
  _Flattener,
  is_array_leaf,
)
from flax.nnx.graphnodes import (
  GRAPH_NODE_TYPES,
)
from flax.nnx.graphpaths import cache_paths
from flax.nnx.graphpaths import _paths_match
from flax.nnx.graphpaths import _paths_mismatch
from flax.nnx.graphpaths import graphdef_paths
from flax.nnx.graphtree import is_leaf_root as _is_tree_leaf_root
from flax.nnx.graphtree import _flatten as _flatten_tree
from flax.nnx.graphtree import TreeParts, _watched
from flax.nnx.graphtree import tree_states
from flax.nnx.pytreelib import Pytree
from flax.nnx.statelib import FlatState, State, node_state
from flax.nnx.variablelib import Variable
from flax.nnx.variablelib import store_raw_values

_is_variable = Variable.__instancecheck__
_raw = operator.attrgetter('_raw_value')
_meta = operator.attrgetter('_var_metadata')
_meta_of = operator.attrgetter('_pytree__m')
_repeat = itertools.repeat
_consume = collections.deque(maxlen=0).extend


class GraphDef:
  """The static structure of a graph: node types, attribute names, static
  values, Variable types/metadata and shared references.

  Hashable and comparable (GraphDefs of equal structure are equal), so it
  can be a static argument of ``jax.jit``; a pytree with no leaves.

  Attributes:
    node: the root record of the structure.
    num_leaves: how many leaves (Variables and arrays) the graph holds.
    num_index: how many objects (nodes and Variables) it indexes.
    tree: whether it was made in tree mode (``graph=False``); its leaves
      are then matched by position only.
    outer: outer-index marker: None, ``'same'`` (every object's outer
      index is its own index) or a tuple copied from another GraphDef.
  """

  # ``GraphDef[nnx.Linear]``: the GraphDef of a Linear (for annotations).
  __class_getitem__ = classmethod(types.GenericAlias)

  __slots__ = (
    'node',
    'num_leaves',
    'num_index',
    'tree',
    'outer',
    '_hash',
    '_plan',
    '_refs',
  )

  def __init__(self, nodes, attributes, num_leaves):
    """Builds a GraphDef from its typed records (see :attr:`nodes` and
    :attr:`attributes`): ``GraphDef(g.nodes, g.attributes, g.num_leaves)``
    equals ``g``."""

    node, num_index, outer = node_from_records(nodes, attributes)
    tree = node[0] == 't'
    _init_graphdef(self, node, num_leaves, num_index, tree, outer)

  @classmethod
  def _create(cls, node, num_leaves, num_index, *, tree=False, outer=None):
    graphdef = object.__new__(cls)
    _init_graphdef(graphdef, node, num_leaves, num_index, tree, outer)
    return graphdef

  def __eq__(self, other):
    return isinstance(other, GraphDef) and (
      self is other
      or (
        self.tree == other.tree
        and self.outer == other.outer
        and self.node == other.node
      )
    )

  def __hash__(self):
    h = self._hash
    if h is None:
      h = self._hash = hash((self.node, self.tree, self.outer))
    return h

  def __repr__(self):
    if self.node[0] == 't':
      nodes = ', '.join(map(repr, self.nodes))
      return (
        f'GraphDef(nodes=[{nodes}], attributes=[], '
        f'num_leaves={self.num_leaves})'
      )
    mode = ', tree' if self.tree else ''
    return (
      f'GraphDef({_node_repr(self.node)}, num_leaves={self.num_leaves}{mode})'
    )

  def _replace(self, **changes):
    fields = dict(tree=self.tree, outer=self.outer)
    fields.update(changes)
    new = GraphDef._create(self.node, self.num_leaves, self.num_index, **fields)
    new._plan = self._plan
    return new

  @property
  def nodes(self) -> list:
    """Typed records of the graph's nodes and Variables, in order."""

    return graphdef_records(self)[0]

  @property
  def attributes(self) -> list:
    """``(key, NodeAttr() / LeafAttr() / Static(value))`` of every
    attribute, node by node."""

    return graphdef_records(self)[1]

  def has_refs(self) -> bool:
    """Whether some object is reachable through more than one path."""
    refs = self._refs
    if refs is None:
      refs = self._refs = _node_has_refs(self.node)
    return refs

  def with_no_outer_index(self) -> 'GraphDef':
    """This GraphDef without outer indices."""
    return self if self.outer is None else self._replace(outer=None)

  def with_same_outer_index(self) -> 'GraphDef':
    """This GraphDef with every outer index equal to the object's index."""
    return self._replace(outer='same')

  def with_matching_outer_index(self, other) -> 'GraphDef':
    """This GraphDef with the outer indices of ``other``."""
    if not isinstance(other, GraphDef):
      raise TypeError(f'expected a GraphDef, got {type(other).__name__}')
    return self._replace(outer=other.outer)

  def merge(self, state, /, *states):
    return merge(self, state, *states)

  def apply(self, state, *states, graph=None):
    """Returns a proxy whose method calls run on a merged copy and return
    ``(out, (graphdef, state))`` with the updated state.

    >>> from flax import nnx
    >>> import jax.numpy as jnp
    >>> class Counter(nnx.Module):
    ...   def __init__(self):
    ...     self.n = nnx.BatchStat(jnp.array(0))
    ...   def inc(self):
    ...     self.n[...] += 1
    ...     return self.n[...]
    >>> graphdef, state = nnx.split(Counter())
    >>> out, (_, state) = graphdef.apply(state).inc()
    >>> int(out), int(state['n'][...])
    (1, 1)
    """

    merged = State.merge(state, *states)

    def run(accessor, *args, **kwargs):
      obj = merge(self, merged)
      out = accessor(obj)(*args, **kwargs)
      return out, split(obj, graph=graph)

    return proxy_caller.CallableProxy(run)

  def __reduce__(self):
    return (
      _rebuild_graphdef,
      (self.node, self.num_leaves, self.num_index, self.tree, self.outer),
    )


A = tp.TypeVar('A')
Node = tp.TypeVar('Node')

# What ``nnx.split`` returns for one State: ``PureState[nnx.Linear]``.
PureState = tuple[GraphDef[Node], State]


def _is_leaf_root(node) -> bool:
  """Whether the root of a GraphDef is itself its one leaf (its state is
  that leaf, not a State)."""
  kind = node[0]
  return kind == 'a' or (kind == 't' and _is_tree_leaf_root(node))


def _rebuild_graphdef(node, num_leaves, num_index, tree, outer):
  return GraphDef._create(node, num_leaves, num_index, tree=tree, outer=outer)


def _init_graphdef(graphdef, node, num_leaves, num_index, tree, outer):
  graphdef.node = node
  graphdef.num_leaves = num_leaves
  graphdef.num_index = num_index
  graphdef.tree = tree
  graphdef.outer = outer
  graphdef._hash = None
  graphdef._plan = None
  graphdef._refs = None


def _node_has_refs(node) -> bool:
  kind = node[0]
  if kind == 'r':
    return True
  if kind in ('n', 'g'):
    return any(_node_has_refs(c) for _, c in node[3])
  if kind in ('l', 'd', 'p'):
    return any(_node_has_refs(c) for c in node[2])
  return False


jax.tree_util.register_pytree_node(GraphDef, lambda g: ((), g), lambda g, _: g)


def _node_repr(node):
  kind = node[0]
  if kind in ('n', 'g'):
    return f'{node[1].__name__}#{node[2]}'
  if kind == 'v':
    return f'{node[1].__name__}#{node[2]}'
  return kind


# -- the typed records of a GraphDef (NodeDef, VariableDef, ...) ----------


def graphdef_records(graphdef) -> tuple[list, list]:
  """The typed records of ``graphdef``: its ``nodes`` (NodeDef,
  VariableDef, NodeRef, in traversal order) and ``attributes`` (key and
  NodeAttr / LeafAttr / Static, per node in the same order)."""

  outer = graphdef.outer
  outer_map = dict(outer) if isinstance(outer, tuple) else {}

  def outer_of(index):
    if index is None:
      return None
    return index if outer == 'same' else outer_map.get(index)

  nodes: list = []
  attributes: list = []
  if graphdef.node[0] == 't':  # tree mode: the treedef and the Variables
    _, cls, treedef, path_index, variables = graphdef.node
    nodes.append(TreeNodeDef(cls, treedef, path_index))
    nodes.extend(
      VariableDef(c, i, outer_of(i), _public_meta(meta), None)
      for i, c, meta in variables
    )
    return nodes, attributes

  def visit(node, key):
    kind = node[0]
    if kind == 'r':
      nodes.append(NodeRef(node[1]))
      if key is not None:
        attributes.append((key, NODE_ATTR))
      return
    if kind == 'v':
      index = node[2]
      nodes.append(
        VariableDef(
          node[1],
          index,
          outer_of(index),
          _public_meta(node[3]),
          None,
        )
      )
      if key is not None:
        attributes.append((key, NODE_ATTR))
      return
    if kind in ('a', 's'):
      if key is not None:
        attributes.append(
          (key, LEAF_ATTR if kind == 'a' else Static(node[1].value))
        )
      return
    if key is not None:
      attributes.append((key, NODE_ATTR))
    if kind == 'n':
      index = node[2]
      nodes.append(
        NodeDef(node[1], index, outer_of(index), len(node[3]), node[1])
      )
      children = node[3]
    elif kind == 'g':  # a registered graph node type: its aux data
      index = node[2]
      nodes.append(
        NodeDef(node[1], index, outer_of(index), len(node[3]), node[4].value)
      )
      children = node[3]
    elif kind == 'l':
      children = tuple(enumerate(node[2]))
      nodes.append(NodeDef(GenericPytree, None, None, len(children), node[1]))
    elif kind == 'd':
      children = tuple(zip(node[1], node[2]))
      nodes.append(NodeDef(GenericPytree, None, None, len(children), dict))
    else:  # 'p': a registered pytree (children maybe in sorted key order)
      children = tuple(enumerate(node[2]))
      meta = node[1] if len(node) == 3 else (node[1], node[3], node[4])
      nodes.append(NodeDef(GenericPytree, None, None, len(children), meta))
    for k, child in children:
      visit(child, k)

  visit(graphdef.node, None)
  return nodes, attributes


def node_from_records(nodes, attributes) -> tuple:
  """The inverse of :func:`graphdef_records`: ``(root node record, number
  of indexed objects, outer-index marker)`` of a GraphDef."""
  nodes, attributes = list(nodes), list(attributes)
  if nodes and isinstance(nodes[0], TreeNodeDef):
    return _tree_node_from_records(nodes, attributes)
  pos = [0, 0]
  indices = []
  outers = []

  def next_attr():
    if pos[1] >= len(attributes):
      raise ValueError('GraphDef: fewer attributes than the nodes need.')
    item = attributes[pos[1]]
    pos[1] += 1
    return item

  def build():
    if pos[0] >= len(nodes):
      raise ValueError('GraphDef: fewer nodes than the attributes need.')
    rec = nodes[pos[0]]
    pos[0] += 1
    if isinstance(rec, NodeRef):
      return ('r', rec.index)
    if isinstance(rec, VariableDef):
      indices.append(rec.index)
      outers.append((rec.index, rec.outer_index))
      meta = _stored_meta(rec.metadata)
      return ('v', rec.type, rec.index, _Meta(meta) if meta else _EMPTY_META)
    if not isinstance(rec, NodeDef):
      raise TypeError(f'GraphDef: unexpected node record {rec!r}')
    keys, children = [], []
    for _ in range(rec.num_attributes):
      key, kind = next_attr()
      keys.append(key)
      if isinstance(kind, Static):
        children.append(('s', _Static(kind.value)))
      elif isinstance(kind, LeafAttr):
        children.append(('a',))
      else:
        children.append(build())
    if rec.index is not None:
      indices.append(rec.index)
      outers.append((rec.index, rec.outer_index))
      if rec.type in GRAPH_NODE_TYPES:
        items = tuple(zip(keys, children))
        return ('g', rec.type, rec.index, items, _Static(rec.metadata))
      data = frozenset(k for k, c in zip(keys, children) if c[0] != 's')
      return ('n', rec.type, rec.index, tuple(zip(keys, children)), data)
    meta = rec.metadata
    if meta is dict:
      return ('d', tuple(keys), tuple(children))
    if isinstance(meta, type):
      return ('l', meta, tuple(children))
    if type(meta) is tuple:  # (treedef, sorted keys, places)
      return ('p', meta[0], tuple(children), meta[1], meta[2])
    return ('p', meta, tuple(children))

  root = build()
  if pos[0] != len(nodes) or pos[1] != len(attributes):
    raise ValueError('GraphDef: nodes and attributes do not match.')
  num_index = max(indices, default=-1) + 1
  pairs = tuple((i, o) for i, o in outers if o is not None)
  if pairs and all(i == o for i, o in outers):
    outer = 'same'
  else:
    outer = tuple(sorted(pairs)) or None
  return root, num_index, outer


def _public_meta(meta):
  """The metadata a VariableDef shows: the Variable's own entries, then
  the entries every Variable has (as ``Variable.get_metadata`` lists
  them)."""

  items = meta.items
  out = {k: v for k, v in items.items() if k not in _REQUIRED_DEFAULTS}
  for key, default in _REQUIRED_DEFAULTS.items():
    out[key] = items.get(key, default)
  return HashableMapping(out)


def _stored_meta(mapping) -> dict:
  """The inverse of :func:`_public_meta`: entries equal to the defaults
  every Variable has are not stored."""

  return {
    k: v
    for k, v in dict(mapping).items()
    if k not in _REQUIRED_DEFAULTS or v != _REQUIRED_DEFAULTS[k]
  }


def _tree_node_from_records(nodes, attributes) -> tuple:
  """:func:`node_from_records` of a tree-mode GraphDef: a TreeNodeDef
  followed by the VariableDefs of its Variable leaves."""
  if attributes:
    raise ValueError('GraphDef: a tree-mode GraphDef has no attributes.')
  root, variables = nodes[0], []
  for rec in nodes[1:]:
    if not isinstance(rec, VariableDef):
      raise TypeError(
        f'GraphDef: unexpected node record {rec!r} after a TreeNodeDef.'
      )
    meta = _stored_meta(rec.metadata)
    variables.append(
      (rec.index, rec.type, _Meta(meta) if meta else _EMPTY_META)
    )
  node = (
    't',
    root.type,
    root.treedef,
    tuple(root.path_index),
    tuple(variables),
  )
  return node, len(root.path_index), None


class _View:
  """Cached flat view of a graph root.

  A Pytree root's record keeps its view (see :func:`flat_view`), so such a
  view holds its root weakly: a strong reference would close a cycle
  (root, record, view, root) that keeps the graph and its arrays alive
  until Python's cycle collector runs, long after the last user reference
  is gone (e.g. a temporary ``nnx.Rngs`` passed to ``nnx.jit``).
  """

  __slots__ = (
    'epoch',
    'meta_epoch',
    'graphdef',
    'leaves',
    'paths',
    'root',
    'descendants',
    'root_version',
    'versions',
    'containers',
    'all_variables',
    'tree_ok',
    'tree_parts',
    'ids',
    'masks',
    'path_index',
    'ordered',
    'shared_refs',
    '__weakref__',
  )

  @property
  def nodes(self) -> list:
    """Every graph node, in the flattener's order (the root first when it
    is a node)."""
    if self.root is None:
      return list(self.descendants)
    return [self.root(), *self.descendants]


class _Held:
  """A strong reference called like a ``weakref.ref`` (the root of a view
  no record keeps)."""

  __slots__ = ('obj',)

  def __init__(self, obj):
    self.obj = obj

  def __call__(self):
    return self.obj


def _build_view(root, *, weak_root: bool = False) -> _View:
  f = _Flattener()
  node = f.visit_root(root)
  view = _View()
  view.epoch = EPOCH.value
  view.meta_epoch = META_EPOCH.value
  view.graphdef = GraphDef._create(node, len(f.leaves), f.counter)
  view.leaves = f.leaves
  view.paths = f.paths
  nodes = [obj for _, obj in f.nodes]
  if nodes and nodes[0] is root:
    view.root = weakref.ref(root) if weak_root else _Held(root)
    view.descendants = nodes[1:]
  else:  # a root that is not a node (a container, an array)
    view.root, view.descendants = None, nodes
  # The root's own record (which keeps a weak-root view) is checked
  # through the root: listing it here would close a cycle (record, view).
  own = root._pytree__m if weak_root else None
  view.root_version = None if own is None else own.version
  view.versions = [
    (m, m.version) for m in map(_meta_of, f.versions) if m is not own
  ]
  view.containers = container_snapshot(f.containers)
  view.all_variables = not f.hijax and all(map(_is_variable, f.leaves))
  # Lets merge(graphdef, state-from-split) match paths by identity.
  cache_paths(view.graphdef, view.paths)
  view.tree_ok = None
  view.tree_parts = None
  view.ids = None
  view.masks = {}
  view.path_index = None
  view.ordered = False
  view.shared_refs = f.shared_refs
  return view


def flat_view(root) -> _View:
  """The cached flat view of ``root`` (rebuilt if its structure changed).

  The view is valid while no attribute of its Pytrees was set or deleted,
  no Variable metadata changed and its containers hold the same objects.
  """
  if isinstance(root, Pytree):
    view = root._pytree__m.view
    if view is not None:
      if view.meta_epoch == META_EPOCH.value and (
        view.epoch == EPOCH.value
        or (
          root._pytree__m.version == view.root_version
          and all(m.version == v for m, v in view.versions)
        )
      ):
        if view.containers is None or view.containers.unchanged():
          view.epoch = EPOCH.value
          return view
    view = _build_view(root, weak_root=True)
    root._pytree__m.view = view
    return view
  return _build_view(root)


def _attribute_order(key):
  return (0, key, '') if isinstance(key, int) else (1, 0, str(key))


def order_attributes(views, rebuilt: bool = False) -> None:
  """Puts the attributes of every Pytree of ``views`` in sorted order, as
  a transform with graph updates leaves its input objects (then printed,
  iterated and listed by ``vars`` in that order). Done once per view;
  ``rebuilt``: the structure changed during the call, so the views are
  built afresh first."""
  for v in views:
    if rebuilt:
      v = flat_view(v.nodes[0])
    if v.ordered:
      continue
    for obj in v.nodes:
      if isinstance(obj, Pytree):
        attrs = obj.__dict__
        keys = list(attrs)
        order = sorted(keys, key=_attribute_order)
        if order != keys:
          items = [(k, attrs[k]) for k in order]
          attrs.clear()
          attrs.update(items)
    v.ordered = True


def view_ids(view: _View) -> frozenset:
  ids = view.ids
  if ids is None:
    ids = view.ids = frozenset(map(id, view.nodes))
  return ids


def leaf_mask(paths, leaves, predicates: tuple) -> list:
  """Index of the first predicate matching each ``(path, leaf)`` (a
  Variable, or an array slot matched by its value);
  ``len(predicates)`` where none does."""
  n = len(predicates)
  mask = []
  for path, leaf in zip(paths, leaves):
    value = leaf if isinstance(leaf, Variable) else leaf._raw_value
    for i, pred in enumerate(predicates):
      if pred(path, value):
        mask.append(i)
        break
    else:
      mask.append(n)
  return mask


def view_mask(view: _View, predicates: tuple) -> list:
  """:func:`leaf_mask` of the leaves of ``view`` (cached on the view)."""
  mask = view.masks.get(predicates)
  if mask is None:
    mask = leaf_mask(view.paths, view.leaves, predicates)
    if len(view.masks) >= 64:  # filters made anew per call: stay bounded
      view.masks.clear()
    view.masks[predicates] = mask
  return mask


def is_graph_node(x) -> bool:
  """Whether ``x`` is a graph node: a Pytree (Module, ...), a Variable or
  an instance of a type registered with ``register_graph_node_type``."""
  return isinstance(x, (Pytree, Variable)) or type(x) in GRAPH_NODE_TYPES


def is_node(x) -> bool:
  """Whether ``x`` has children the graph traverses: a Pytree or a JAX
  pytree container (not a Variable, not a leaf)."""
  if isinstance(x, Pytree) or type(x) in GRAPH_NODE_TYPES:
    return True
  if isinstance(x, Variable) or x is None or is_array_leaf(x):
    return False
  return type(x) in (list, tuple, dict) or not jax.tree_util.all_leaves([x])


# -- unflatten ------------------------------------------------------------------

_unflatten = rebuildlib.unflatten_node
_rebuild = rebuildlib.unflatten


# -- public API -------------------------------------------------------------------


def _copy_variables(variables) -> list:
  """Copies of ``variables`` (same types, values and metadata), made with
  C-level loops only."""
  new = list(map(object.__new__, map(type, variables)))
  store_raw_values(new, map(_raw, variables))
  _consume(
    map(
      object.__setattr__,
      new,
      _repeat('_var_metadata'),
      map(dict, map(_meta, variables)),
    )
  )
  return new


def _states_from_view(view, filters, copy=True):
  leaves = view.leaves
  if view.all_variables:
    values = _copy_variables(leaves) if copy else list(leaves)
  else:
    values = [
      (leaf.copy() if copy else leaf)
      if isinstance(leaf, Variable)
      else leaf._raw_value
      for leaf in leaves
    ]
  if not filters:
    return [node_state(view.paths, values)]
  predicates = filterlib.filters_to_predicates(filters)
  mask = view_mask(view, predicates)
  n = len(predicates)
  buckets = [([], []) for _ in range(n)]
  for m, path, value in zip(mask, view.paths, values):
    if m == n:
      continue
    buckets[m][0].append(path)
    buckets[m][1].append(value)
  return [node_state(p, v) for p, v in buckets]


def _check_exhaustive(view, filters):
  predicates = filterlib.filters_to_predicates(filters)
  mask = view_mask(view, predicates)
  n = len(predicates)
  for m, path in zip(mask, view.paths):
    if m == n:
      raise ValueError(
        'Non-exhaustive filters, got a non-empty remainder: the value at '
        f'path {path!r} is matched by none of {filters!r}; add `...` as the '
        'last filter to collect the rest.'
      )


def split(node, *filters, graph=None):
  """Splits a graph node into a :class:`GraphDef` and one State per filter.

  The States hold the node's own Variables. With ``graph=False`` (tree
  mode) the node must be a tree: a Variable or node reachable through two
  paths is a ValueError.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.zeros(1))
  >>> graphdef, state = nnx.split(M())
  >>> list(state.keys())
  ['w']
  """
  if graph is False or (graph is None and not graph_mode_default()):
    return _tree_split(node, filters)
  view = flat_view(node)
  if filters:
    _check_exhaustive(view, filters)
  return (view.graphdef, *_states_from_view(view, filters, copy=False))


def tree_parts(node) -> TreeParts:
  """Flattens ``node`` in tree mode.

  Raises a ValueError for a Variable or ``jax.Ref`` reachable through two
  paths, a reference cycle, or a Pytree declared with ``pytree=False``
  (the messages name ``split`` and ``flatten``, which every tree-mode
  function goes through). Other objects may be shared: they are copied by
  the rebuild, as JAX does.

  The flattening of a Pytree root is kept with the root's cached flat
  view (see :func:`flat_view`): while no attribute,
  container or Variable metadata of the graph changed, the same leaves
  are found again. It is not kept when the tree holds a pytree node the
  view does not watch (an instance of a mutable registered pytree class,
  whose fields could change in place).
  """
  if isinstance(node, Pytree):
    view = flat_view(node)
    parts = view.tree_parts
    if parts is None:
      parts = _flatten_tree(node)
      if _watched(parts.node[2]):
        view.tree_parts = parts
    return parts
  return _flatten_tree(node)


def _tree_graphdef_of(parts) -> GraphDef:
  graphdef = parts.graphdef
  if graphdef is None:
    n = len(parts.leaves)
    graphdef = parts.graphdef = GraphDef._create(parts.node, n, n, tree=True)
  return graphdef


def _tree_split(node, filters, exhaustive=True):
  """``(graphdef, state, ...)`` of ``node`` in tree mode."""
  parts = tree_parts(node)
  states = tree_states(parts, filters, exhaustive=exhaustive)
  return (_tree_graphdef_of(parts), *states)


def state(node, *filters, graph=None):
  """Returns the State of ``node`` (one State per filter if several).

  The State holds the node's own Variables.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.zeros(1))
  ...     self.s = nnx.BatchStat(jnp.zeros(1))
  >>> list(nnx.state(M(), nnx.BatchStat).keys())
  ['s']
  """
  if graph is False or (graph is None and not graph_mode_default()):
    _, *states = _tree_split(node, filters, exhaustive=False)
  else:
    states = _states_from_view(flat_view(node), filters, copy=False)
  return states[0] if len(states) == 1 else tuple(states)


variables = state


def graphdef(node, /, *, graph=None) -> GraphDef:
  """Returns the :class:`GraphDef` of ``node``."""
  if graph is False or (graph is None and not graph_mode_default()):
    return _tree_graphdef_of(tree_parts(node))
  return flat_view(node).graphdef


def _leaves_for(graphdef: GraphDef, states) -> list:
  """Orders the leaves of ``states`` as ``graphdef`` expects them."""
  flats = []
  for s in states:
    if isinstance(s, (list, tuple)) and not isinstance(s, State):
      flats.append((None, list(s)))
      continue
    if isinstance(s, Variable) or (
      not isinstance(s, (State, FlatState)) and _is_leaf_root(graphdef.node)
    ):
      # the state of a Variable root or of a leaf root (see split)
      flats.append(([()], [s]))
      continue
    if not isinstance(s, State):
      s = State(s) if not hasattr(s, 'paths') else s.to_nested_state()
    flats.append(s._flat_items())
  total = sum(len(leaves) for _, leaves in flats)
  if total != graphdef.num_leaves:
    raise ValueError(
      f'Incorrect number of leaves, expected {graphdef.num_leaves} leaves, '
      f'but got {total}.{_paths_mismatch(graphdef, flats)}'
    )
  if len(flats) == 1:
    paths, leaves = flats[0]
    if paths is None or graphdef.tree or _paths_match(graphdef, paths):
      return leaves
  if graphdef.tree or any(paths is None for paths, _ in flats):
    # Tree mode matches leaves by position, in path order.
    pairs = []
    for paths, leaves in flats:
      if paths is None:
        raise ValueError(
          'Cannot merge a list of leaves together with other states; '
          'pass the leaves alone.'
        )
      pairs.extend(zip(paths, leaves))
    order = {p: i for i, p in enumerate(graphdef_paths(graphdef))}
    pairs.sort(key=lambda pv: order.get(pv[0], len(order)))
    return [v for _, v in pairs]
  lookup = {}
  for paths, leaves in flats:
    lookup.update(zip(paths, leaves))
  out = []
  for path in graphdef_paths(graphdef):
    if path not in lookup:
      raise ValueError(
        f'The states passed to merge have no value at path {path!r}, '
        'which the GraphDef expects. Pass every State returned by split.'
      )
    out.append(lookup[path])
  return out


def merge(
  graphdef_or_graphstate,
  /,
  *states,
  copy: bool = False,
  recreate_variables: bool = True,
):
  """Rebuilds the object described by a GraphDef from its states.

  The Variables of the states become the Variables of the new object (pass
  ``copy=True`` to copy them). Plain values in the states (e.g. from
  ``nnx.as_pure``) are wrapped in new Variables of the GraphDef's types
  when ``recreate_variables`` is True, and used as they are otherwise. A
  tree-mode GraphDef (from ``graph=False``) always recreates them: it
  records which of its leaves are Variables.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.zeros(1))
  >>> graphdef, state = nnx.split(M())
  >>> m = nnx.merge(graphdef, state)
  >>> m.w is state['w']
  True
  """
  graphdef = graphdef_or_graphstate
  if isinstance(graphdef, GraphState):
    graphdef, states = _graph_states(graphdef, states)
  elif not isinstance(graphdef, GraphDef):
    raise TypeError(
      f'Expected a GraphDef or GraphState object, got: {graphdef!r}; call '
      'it as nnx.merge(graphdef, state).'
    )
  elif not states:
    raise TypeError(
      "merge() missing 1 required positional argument: 'state' (the "
      'State that split returned with this GraphDef).'
    )
  leaves = _leaves_for(graphdef, states)
  if copy:
    leaves = [v.copy() if isinstance(v, Variable) else v for v in leaves]
  return _rebuild(graphdef, leaves, raw=False, wrap=recreate_variables)


def _graph_states(first, rest):
  """The GraphDef and States of GraphStates passed to merge (all must be
  GraphStates of the same GraphDef)."""
  states = [first.state]
  for gs in rest:
    if not isinstance(gs, GraphState):
      raise ValueError(
        f'Expected GraphState object, got {type(gs)}: merge takes either '
        'GraphStates only or a GraphDef and States.'
      )
    if gs.graphdef != first.graphdef:
      raise ValueError(
        'GraphDef must be the same for all GraphState objects passed to '
        'merge; they come from different graphs.'
      )
    states.append(gs.state)
  return first.graphdef, states


class GraphState(MutableMapping, reprlib.Representable, tp.Generic[A]):
  """A GraphDef with one of its States: a mapping (the State's) that
  ``nnx.merge`` accepts alone.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(2))
  >>> gs = nnx.unpack(M())
  >>> list(gs), type(nnx.merge(gs)).__name__
  (['w'], 'M')
  """

  def __init__(self, _graphdef, _state):
    self._graphdef = _graphdef
    self._state = _state

  @property
  def graphdef(self):
    return self._graphdef

  @property
  def state(self):
    return self._state

  # The mapping protocol is the State's.
  def __len__(self):
    return len(self._state)

  def __getitem__(self, key):
    return self._state[key]

  def __iter__(self):
    return iter(self._state)

  def __setitem__(self, key, value):
    self._state[key] = value

  def __contains__(self, key):
    return key in self._state

  def __delitem__(self, key):
    del self._state[key]

  def __getattr__(self, name):
    # ``graph_state.kernel``: the State's entry.
    if name.startswith('_'):
      raise AttributeError(name)
    try:
      return self._state[name]
    except KeyError:
      raise AttributeError(
        f'{type(self).__name__!r} object has no attribute {name!r}'
      ) from None

  def __nnx_repr__(self):
    yield reprlib.Object(type(self))
    yield reprlib.Attr('graphdef', self._graphdef)
    yield reprlib.Attr('state', self._state)


# A GraphState flattens as its State does (same children and key paths);
# the GraphDef is static.


def _graph_state_flatten_with_keys(gs):
  children, keys = statelib._state_flatten_with_keys(gs._state)
  return children, (gs._graphdef, keys)


def _graph_state_flatten(gs):
  children, keys = statelib._state_flatten(gs._state)
  return children, (gs._graphdef, keys)


def _graph_state_unflatten(aux, children):
  graphdef, keys = aux
  return GraphState(graphdef, statelib._state_unflatten(keys, children))


jax.tree_util.register_pytree_with_keys(
  GraphState,
  _graph_state_flatten_with_keys,
  _graph_state_unflatten,
  _graph_state_flatten,
)


# Their public home is flax.nnx.graphlib (reprs, pickles); their examples
# are run as this module's.
GraphDef.__module__ = 'flax.nnx.graphlib'
GraphState.__module__ = 'flax.nnx.graphlib'
__test__ = {'GraphDef': GraphDef, 'GraphState': GraphState}
