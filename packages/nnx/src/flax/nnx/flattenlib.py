"""Flattening graph nodes: one traversal of a graph into a graphdef node,
its leaves (Variables and array slots), paths, and structural snapshots.

Used by :mod:`flax.nnx.graphlib` to build the cached flat views of graph
roots, and by transforms to flatten the objects they rebuild inside.
"""

import itertools
import operator

import jax
import numpy as np

from flax.nnx.graphnodes import GRAPH_NODE_TYPES
from flax.nnx.pytreelib import Pytree, state_flags
from flax.nnx.statelib import State
from flax.nnx.variablelib import Variable, VariableMeta

# (after variablelib, which loads it at its end)
from flax.nnx._hijax_graph import (
  HIJAX_CLASSES,
  hijax_class,
  traced_variable_def,
)
from flax.nnx._variable_tree import is_ref

_PLAIN_ARRAY_TYPES = (jax.Array, np.ndarray)
_TRACER = jax.core.Tracer


# Exact types whose values are static in a graphdef whatever else holds:
# None, numbers, strings and classes (``type`` and the metaclasses met,
# e.g. that of ``jnp.float32``). A layer's sizes, flags and dtypes take
# this path, once per attribute, without the node and array checks. Each
# maps to its shared ``('s', _Static(value))`` nodes by value (None: not
# shared): a large graph holds few distinct such values, and its first
# flattening then builds (and leaves to the garbage collector) few
# objects. Floats are not shared (``0.0 == -0.0``), nor are the classes
# of metaclasses met later (their equality is theirs).
_STATIC_NODES: dict = {
  type(None): {},
  str: {},
  int: {},
  bool: {},
  type: {},
  float: None,
}


def _static_node(tx, x):
  """``('s', _Static(x))`` for ``x`` of a type of ``_STATIC_NODES``."""
  shared = _STATIC_NODES[tx]
  if shared is None:
    return ('s', _Static(x))
  node = shared.get(x)
  if node is None:
    if len(shared) >= 4096:
      shared.clear()
    node = shared[x] = ('s', _Static(x))
  return node


def is_array_leaf(x) -> bool:
  """Whether ``x`` is a leaf of a graph's state besides Variables: an
  array, or a raw ``jax.Ref`` (asked last: it is the slow check)."""
  return isinstance(x, _PLAIN_ARRAY_TYPES) or is_ref(x)


class _Static:
  """A static value in a graphdef; hashable even when the value is not."""

  __slots__ = ('value',)

  def __init__(self, value):
    self.value = value

  def __eq__(self, other):
    if type(other) is not _Static:
      return False
    a, b = self.value, other.value
    if a is b:
      return True
    if type(a) is not type(b):
      return False
    try:
      return bool(a == b)
    except Exception:
      return False

  def __hash__(self):
    try:
      return hash((type(self.value), self.value))
    except TypeError:
      return hash(type(self.value))

  def __repr__(self):
    return repr(self.value)


class _Meta:
  """Frozen snapshot of Variable metadata inside a graphdef."""

  __slots__ = ('items', '_hash')

  def __init__(self, metadata):
    self.items = dict(metadata)
    self._hash = None

  def __eq__(self, other):
    return type(other) is _Meta and self.items == other.items

  def __hash__(self):
    h = self._hash
    if h is None:
      try:
        h = hash(tuple(sorted(self.items.items())))
      except TypeError:
        h = hash(tuple(sorted(self.items)))
      self._hash = h
    return h

  def __repr__(self):
    return repr(self.items)


_EMPTY_META = _Meta({})


class _ArraySlot:
  """Write-back location of an array stored directly in a Pytree attribute
  (possibly inside containers).

  ``snaps`` holds, for each container level below the attribute, the
  ``(snapshot, position)`` of that container's structural snapshot (or
  None), so that writing an array keeps the snapshots in sync.
  """

  __slots__ = ('owner', 'keys', 'snaps')

  def __init__(self, owner, keys, snaps=()):
    self.owner = owner
    self.keys = keys
    self.snaps = snaps

  @property
  def _raw_value(self):
    x = vars(self.owner)
    for k in self.keys:
      x = _child(x, k)
    return x

  @_raw_value.setter
  def _raw_value(self, value):
    d = vars(self.owner)
    k0 = self.keys[0]
    d[k0] = x = _set_in(d[k0], self.keys[1:], value)
    if self.snaps:
      for k, snap in zip(self.keys[1:], self.snaps):
        x = _child(x, k)
        if snap is not None:
          snap[0][snap[1]] = x


class _RootBox:
  """Holds a root that is not a Pytree, so that its array slots have an
  owner to read from (attribute ``root``)."""


def _pytree_children(container):
  kv, _ = jax.tree_util.tree_flatten_with_path(
    container, is_leaf=lambda y: y is not container
  )
  return [_key_of(p[0]) for p, _ in kv], [v for _, v in kv]


def _child(container, k):
  """The child of a container at key ``k`` (an index, a dict key, or the
  key of a child of another pytree, e.g. a dataclass field name)."""
  if type(container) in (list, dict, tuple):
    return container[k]
  keys, values = _pytree_children(container)
  return values[keys.index(k)]


def _set_in(container, keys, value):
  if not keys:
    return value
  k = keys[0]
  if isinstance(container, list):
    container[k] = _set_in(container[k], keys[1:], value)
    return container
  if isinstance(container, dict):
    container[k] = _set_in(container[k], keys[1:], value)
    return container
  if isinstance(container, tuple) and isinstance(k, int):
    items = list(container)
    items[k] = _set_in(items[k], keys[1:], value)
    if hasattr(container, '_fields'):
      return type(container)(*items)
    return type(container)(items)
  raise ValueError(
    f'Cannot set key {k!r} on immutable node of type '
    f'{type(container).__name__}: a registered pytree is rebuilt, not '
    'written in place.'
  )


def _key_of(entry):
  for attr in ('key', 'idx', 'name'):
    if hasattr(entry, attr):
      return getattr(entry, attr)
  return str(entry)


def _sorted_order(keys) -> list | None:
  """Positions of ``keys`` in sorted order; None when already sorted (or
  not comparable)."""
  try:
    order = sorted(range(len(keys)), key=keys.__getitem__)
  except TypeError:
    return None
  return None if order == list(range(len(keys))) else order


def _is_graph_leaf(x) -> bool:
  return isinstance(x, (Variable, Pytree))


def _sorted_items(d: dict):
  try:
    return sorted(d.items())
  except TypeError:
    return list(d.items())


class _Flattener:
  """One traversal of one or more roots, sharing reference indices.

  Besides the graphdef it records the leaves (Variables or array slots),
  their paths, the Pytree nodes (their versions guard cached views) and a
  snapshot of every mutable container met below a Pytree attribute (lists,
  dicts, mutable pytrees), so that in-place edits such as ``list.append``
  invalidate cached views too.
  """

  def __init__(self, assigned=None, start=0, with_paths=True):
    self.visited: dict = {}
    self.assigned = assigned
    self.counter = start
    self.nodes: list = []  # (index, object)
    self.leaves: list = []  # Variables or _ArraySlot
    self.paths: list = []
    self.versions: list = []
    self.containers: list = []
    self.with_paths = with_paths
    # id -> path of every raw jax.Ref met, and the paths of Refs met again
    # (a tree must not share them).
    self.refs: dict = {}
    self.shared_refs: list = []
    # Whether a hijax Variable (or a traced one) was met: they are read
    # and written through their primitives, not in bulk.
    self.hijax = False

  def _index(self, x):
    i = None
    if self.assigned is not None:
      i = self.assigned.get(id(x))
    if i is None:
      i = self.counter
      self.counter += 1
    self.visited[id(x)] = i
    self.nodes.append((i, x))
    return i

  def visit(self, x, path, owner=None, okeys=(), osnaps=()):
    tx = type(x)
    if tx in _STATIC_NODES and tx not in GRAPH_NODE_TYPES:
      return _static_node(tx, x)
    if isinstance(x, Variable):
      i = self.visited.get(id(x))
      if i is not None:
        return ('r', i)
      i = self._index(x)
      self.leaves.append(x)
      self.paths.append(path)
      if type(tx) is not VariableMeta:
        return self._hijax_variable(x, tx, i)
      raw = x._raw_value
      if is_ref(raw):
        # the array reference a ``ref=True`` Variable holds has an index of
        # its own, after the Variable's (it travels with the Variable)
        self.nodes.append((self.counter, raw))
        self.counter += 1
      meta = x._var_metadata
      return ('v', tx, i, _Meta(meta) if meta else _EMPTY_META)
    if isinstance(x, Pytree):
      i = self.visited.get(id(x))
      if i is not None:
        return ('r', i)
      i = self._index(x)
      self.versions.append(x)
      data = x._pytree__m.data
      attrs = []
      for k, v in _sorted_items(vars(x)):
        tv = type(v)
        if tv in _STATIC_NODES and k not in data and tv not in GRAPH_NODE_TYPES:
          # a static attribute holding a number, string, None or class
          attrs.append((k, _static_node(tv, v)))
        else:
          attrs.append((k, self._attribute(x, k, v, path + (k,), data)))
      flags = state_flags(x)
      if flags is not None:  # carried to the rebuilt object
        return ('n', type(x), i, tuple(attrs), frozenset(data), flags)
      return ('n', type(x), i, tuple(attrs), frozenset(data))
    if isinstance(x, _PLAIN_ARRAY_TYPES) or is_ref(x):
      if is_ref(x):
        # A raw Ref is one leaf however often it is reached: it is indexed
        # (``('a', index)``) and met again as a reference.
        i = self.visited.get(id(x))
        if i is not None:
          self.shared_refs.append((x, self.refs[id(x)], path))
          return ('r', i)
        self.refs[id(x)] = path
        i = self._index(x)
        self.leaves.append(_ArraySlot(owner, okeys, osnaps))
        self.paths.append(path)
        return ('a', i)
      self.leaves.append(_ArraySlot(owner, okeys, osnaps))
      self.paths.append(path)
      return ('a',)
    if tx is list:
      snap = list(x)
      self.containers.append(('l', x, snap))
      return (
        'l',
        tx,
        tuple(
          self.visit(v, path + (j,), owner, okeys + (j,), osnaps + ((snap, j),))
          for j, v in enumerate(x)
        ),
      )
    if tx is tuple:
      return (
        'l',
        tx,
        tuple(
          self.visit(v, path + (j,), owner, okeys + (j,), osnaps + (None,))
          for j, v in enumerate(x)
        ),
      )
    if tx is dict:
      keys = list(x)
      vals = list(x.values())
      self.containers.append(('d', x, keys, vals))
      pos = {id(k): j for j, k in enumerate(keys)}
      items = _sorted_items(x)
      return (
        'd',
        tuple(k for k, _ in items),
        tuple(
          self.visit(
            v,
            path + (k,),
            owner,
            okeys + (k,),
            osnaps + ((vals, pos[id(k)]),),
          )
          for k, v in items
        ),
      )
    impl = GRAPH_NODE_TYPES.get(tx)
    if impl is not None:
      return self._visit_graph_node(x, impl, path)
    if x is None or isinstance(x, (str, int, float, bool)):
      return ('s', _Static(x))
    if isinstance(x, type):
      _STATIC_NODES.setdefault(tx, None)  # a metaclass: x is a class
      return ('s', _Static(x))
    if not jax.tree_util.all_leaves([x]):
      kv, treedef = jax.tree_util.tree_flatten_with_path(
        x, is_leaf=lambda y: y is not x
      )
      # Look through nested containers too: a pytree holding a dict of
      # Variables (e.g. an optax state of nnx.State) is not static.
      if any(
        isinstance(v, (Variable, Pytree)) or is_array_leaf(v)
        for v in jax.tree_util.tree_leaves(x, is_leaf=_is_graph_leaf)
      ):
        if isinstance(x, State):
          # A State's children are the values of its own dict, in sorted
          # key order: the dict check covers it without pytree flattening.
          raw = x._mapping
          self.containers.append(('d', raw, list(raw), list(raw.values())))
        elif not isinstance(x, tuple):
          self.containers.append(('p', x, treedef, [v for _, v in kv]))
        keys = [_key_of(p[0]) for p, _ in kv]
        order = _sorted_order(keys)
        children = tuple(
          self.visit(
            kv[j][1],
            path + (keys[j],),
            owner,
            okeys + (keys[j],),
            osnaps + (None,),
          )
          for j in (range(len(kv)) if order is None else order)
        )
        if order is None:
          return ('p', treedef, children)
        # Children in sorted key order (the order of the state), with the
        # sorted keys and, per pytree position, its place among them.
        place = [0] * len(order)
        for k, j in enumerate(order):
          place[j] = k
        return (
          'p',
          treedef,
          children,
          tuple(keys[j] for j in order),
          tuple(place),
        )
    return ('s', _Static(x))

  def visit_root(self, root):
    """Visits ``root``, which may be any value: arrays held in a plain
    container root (a dict, a tuple, a dataclass pytree) are read and
    written through a holder of the root, and a root that is not a node
    (an array, a number, a string) is itself the one leaf, at path ``()``."""
    if isinstance(root, (Pytree, Variable)):
      return self.visit(root, ())
    box = _RootBox()
    box.root = root
    node = self.visit(root, (), box, ('root',))
    if node[0] == 's' and root is not None:
      self.leaves.append(_ArraySlot(box, ('root',)))
      self.paths.append(())
      return ('a',)
    return node

  def _hijax_variable(self, x, tx, i):
    """A Variable whose class is not made by ``VariableMeta``: a hijax
    Variable, or a traced one (inside ``jax.jit``, ...), whose class and
    metadata are read through the tracer. Both are written one by one
    (through their primitives), never in bulk."""
    if isinstance(x, _TRACER):
      self.hijax = True
      cls, meta = traced_variable_def(x)
      return ('v', cls, i, _Meta(meta) if meta else _EMPTY_META)
    if tx in HIJAX_CLASSES:
      self.hijax = True
      tx = hijax_class(x.var_type)  # the class recorded per Variable type
    meta = x._var_metadata
    return ('v', tx, i, _Meta(meta) if meta else _EMPTY_META)

  def _attribute(self, owner, key, value, path, data):
    """One attribute of a Pytree: a value of a data attribute that is
    neither a node, a pytree nor None (a number, a string, any other
    object marked ``nnx.data``) is a leaf of the state, as an array is.
    The leaves of a pytree without arrays (a registered dataclass of
    flags, numbers and functions) stay static."""
    node = self.visit(value, path, owner, (key,))
    if (
      node[0] == 's'
      and key in data
      and value is not None
      and not isinstance(value, type)
      and jax.tree_util.all_leaves((value,))
    ):
      self.leaves.append(_ArraySlot(owner, (key,)))
      self.paths.append(path)
      return ('a',)
    return node

  def _visit_graph_node(self, x, impl, path):
    """A node of a type registered with ``register_graph_node_type``:
    ``('g', type, index, ((key, child), ...), static aux)``."""
    i = self.visited.get(id(x))
    if i is not None:
      return ('r', i)
    i = self._index(x)
    items, aux = impl.flatten(x)
    items = list(items)
    self.containers.append(('g', x, impl, items, aux))
    start = len(self.leaves)
    attrs = tuple((k, self.visit(v, path + (k,), x, (k,))) for k, v in items)
    for slot in self.leaves[start:]:
      # Arrays held by the node itself are written back through it.
      if type(slot) is _ArraySlot and slot.owner is x:
        slot.__class__ = _GraphNodeSlot
    return ('g', type(x), i, attrs, _Static(aux))


class _GraphNodeSlot(_ArraySlot):
  """An array slot whose owner is a registered graph node (read and
  written through the node's ``flatten`` and ``set_key``)."""

  __slots__ = ()

  @property
  def _raw_value(self):
    impl = GRAPH_NODE_TYPES[type(self.owner)]
    x = dict(impl.flatten(self.owner)[0])[self.keys[0]]
    for k in self.keys[1:]:
      x = _child(x, k)
    return x

  @_raw_value.setter
  def _raw_value(self, value):
    impl = GRAPH_NODE_TYPES[type(self.owner)]
    k0 = self.keys[0]
    current = dict(impl.flatten(self.owner)[0])[k0]
    x = _set_in(current, self.keys[1:], value)
    impl.set_key(self.owner, k0, x)
    for k, snap in zip(self.keys[1:], self.snaps):
      x = _child(x, k)
      if snap is not None:
        snap[0][snap[1]] = x


def _graph_node_unchanged(entry) -> bool:
  _, x, impl, items, aux = entry
  now, now_aux = impl.flatten(x)
  now = list(now)
  return (
    len(now) == len(items)
    and all(a[0] == b[0] and a[1] is b[1] for a, b in zip(now, items))
    and now_aux == aux
  )


class ContainerSnapshot:
  """What the mutable containers of a view held when it was built.

  Lists and dicts are compared in bulk (their lengths, then every key and
  item by identity, each in one pass over all containers); other mutable
  pytrees are flattened again.
  """

  __slots__ = (
    'lists',
    'list_lens',
    'list_items',
    'dicts',
    'dict_lens',
    'dict_keys',
    'dict_vals',
    'others',
    'graph_nodes',
  )

  def __init__(self, containers):
    lists = [c for c in containers if c[0] == 'l']
    dicts = [c for c in containers if c[0] == 'd']
    self.lists = [c[1] for c in lists]
    self.list_lens = [len(c[2]) for c in lists]
    self.list_items = [v for c in lists for v in c[2]]
    self.dicts = [c[1] for c in dicts]
    self.dict_lens = [len(c[2]) for c in dicts]
    self.dict_keys = [k for c in dicts for k in c[2]]
    self.dict_vals = [v for c in dicts for v in c[3]]
    self.others = [c for c in containers if c[0] == 'p']
    self.graph_nodes = [c for c in containers if c[0] == 'g']

  def unchanged(self) -> bool:
    """Whether every container still holds the same objects."""
    is_ = operator.is_
    if self.dicts and (
      list(map(len, self.dicts)) != self.dict_lens
      or not all(map(is_, _chain(self.dicts), self.dict_keys))
      or not all(
        map(is_, _chain(map(_dict_values, self.dicts)), self.dict_vals)
      )
    ):
      return False
    if self.lists and (
      list(map(len, self.lists)) != self.list_lens
      or not all(map(is_, _chain(self.lists), self.list_items))
    ):
      return False
    for _, x, treedef, children in self.others:
      now, now_treedef = jax.tree_util.tree_flatten(
        x, is_leaf=lambda y: y is not x
      )
      if now_treedef != treedef or not all(map(is_, now, children)):
        return False
    if self.graph_nodes and not all(
      map(_graph_node_unchanged, self.graph_nodes)
    ):
      return False
    return True


_chain = itertools.chain.from_iterable
_dict_values = dict.values


def container_snapshot(containers) -> ContainerSnapshot | None:
  """A :class:`ContainerSnapshot` of ``containers`` (None if empty)."""
  return ContainerSnapshot(containers) if containers else None
