"""Rebuilding objects from a graphdef node and its leaves.

:func:`unflatten_node` walks a graphdef node recursively; it can also update
existing objects in place (``reuse``), which transforms use to write
structure changes back. :class:`Plan` is the fast path for building fresh
objects: compiled once per GraphDef, it creates every Pytree of the graph
in one loop and fills their attributes from precomputed positions, with no
recursion and no per-node dispatch.
"""

import collections
import itertools
import operator

import jax

from flax.nnx._common import EPOCH
from flax.nnx.graphnodes import GRAPH_NODE_TYPES, ArrayRefOutput, NoUpdate
from flax.nnx.graphtree import tree_unflatten
from flax.nnx.pytreelib import PytreeRecord, _new_object, set_state_flags
from flax.nnx.variablelib import Variable, store_raw_value
from flax.nnx._variable_tree import record_trace

# (after variablelib, which loads it at its end)
from flax.nnx._hijax_graph import HIJAX_CLASSES

_set = object.__setattr__
_new = object.__new__
_repeat = itertools.repeat
_consume = collections.deque(maxlen=0).extend
_is_variable = Variable.__instancecheck__


def _new_hijax(cls, value, metadata):
  """A new hijax Variable of the hijax class ``cls`` (a tracer of one
  under a trace), made through its primitive."""
  return cls.from_metadata(value, dict(metadata))


def unflatten_node(node, it, index, reuse, raw, wrap=True):
  """Rebuilds objects from ``node``.

  Args:
    node: graphdef node.
    it: iterator over leaves (raw values when ``raw``, else Variables or
      raw values).
    index: dict index -> object, filled as objects are created.
    reuse: optional dict index -> existing object to update in place.
    raw: whether the leaves are raw values (not Variables).
    wrap: whether a leaf that is not a Variable (when ``raw`` is False)
      gets wrapped in a new Variable of the node's type; when False it is
      placed as it is.
  """
  kind = node[0]
  if kind == 'r':
    return index[node[1]]
  if kind == 'v':
    leaf = next(it)
    i = node[2]
    existing = reuse.get(i) if reuse else None
    is_var = not raw and isinstance(leaf, Variable)
    # (a traced hijax Variable has no ``_raw_value``)
    value = getattr(leaf, '_raw_value', None) if is_var else leaf
    if type(value) in _REF_MARKERS:  # from an update context's inner split
      if existing is not None and type(value) is NoUpdate:
        index[i] = existing
        return existing
      value = _from_marker(value)
      if is_var:
        leaf = leaf.copy(value, _copy_ref=False, ref=True)
      elif not raw:
        leaf = value
    if existing is not None:
      if is_var:
        existing.update_from_state(leaf)
      else:
        store_raw_value(existing, value)
      var = existing
    elif not raw and (not wrap or isinstance(leaf, Variable)):
      var = leaf
    elif node[1] in HIJAX_CLASSES:
      var = _new_hijax(node[1], value, node[3].items)
    else:
      var = _new(node[1])
      store_raw_value(var, value)
      _set(var, '_var_metadata', dict(node[3].items))
      record_trace(var)
    index[i] = var
    return var
  if kind == 'n':
    i = node[2]
    existing = reuse.get(i) if reuse else None
    obj = existing if existing is not None else _new_pytree(node[1], node[4])
    index[i] = obj
    d = {k: unflatten_node(c, it, index, reuse, raw, wrap) for k, c in node[3]}
    od = vars(obj)
    if existing is not None:
      m = obj._pytree__m
      if (
        list(od) != list(d)
        or any(od[k] is not d[k] for k in d)
        or m.data != node[4]
      ):
        od.clear()
        od.update(d)
        m.data = frozenset(node[4])
        m.version += 1
        EPOCH.value += 1
    else:
      od.update(d)
    if existing is not None or len(node) > 5:
      set_state_flags(obj, node[5] if len(node) > 5 else None)
    return obj
  if kind == 'g':
    return _unflatten_graph_node(node, it, index, reuse, raw, wrap)
  if kind == 'a':
    leaf = next(it)
    if not raw and isinstance(leaf, Variable):
      leaf = leaf._raw_value
    if type(leaf) in _REF_MARKERS:  # from an update context's inner split
      existing = reuse.get(node[1]) if reuse and len(node) > 1 else None
      if existing is not None and type(leaf) is NoUpdate:
        leaf = existing
      else:
        leaf = _from_marker(leaf)
    if len(node) > 1:
      index[node[1]] = leaf  # an indexed leaf (a raw jax.Ref)
    return leaf
  if kind == 's':
    return node[1].value
  if kind == 'l':
    return node[1](
      unflatten_node(c, it, index, reuse, raw, wrap) for c in node[2]
    )
  if kind == 'd':
    return {
      k: unflatten_node(c, it, index, reuse, raw, wrap)
      for k, c in zip(node[1], node[2])
    }
  if kind == 'p':
    values = [unflatten_node(c, it, index, reuse, raw, wrap) for c in node[2]]
    if len(node) > 3:  # children in sorted key order
      values = [values[k] for k in node[4]]
    return node[1].unflatten(values)
  if kind == 't':  # a tree-mode root: the node is a JAX pytree
    return tree_unflatten(node, list(it), raw=raw)
  raise ValueError(f'Unknown graphdef node {node!r}')


_new_pytree = _new_object

# What an update context's inner split puts in place of array references
# (``jax.Ref``): the outer merge keeps the original of a NoUpdate and makes
# a new Ref of an ArrayRefOutput's value.
_REF_MARKERS = (NoUpdate, ArrayRefOutput)


def _from_marker(marker):
  """The value a Ref marker stands for when there is no original to keep:
  a new ``jax.Ref`` of an ArrayRefOutput's value (a NoUpdate as it is)."""
  if type(marker) is ArrayRefOutput:
    return jax.new_ref(marker.value)
  return marker


def _unflatten_graph_node(node, it, index, reuse, raw, wrap):
  """Rebuilds (or refills, with ``reuse``) a node of a type registered with
  ``register_graph_node_type`` through its callbacks."""
  impl = GRAPH_NODE_TYPES[node[1]]
  i = node[2]
  existing = reuse.get(i) if reuse else None
  obj = existing if existing is not None else impl.create_empty(node[4].value)
  index[i] = obj
  items = [
    (k, unflatten_node(c, it, index, reuse, raw, wrap)) for k, c in node[3]
  ]
  if existing is not None:
    current, _ = impl.flatten(obj)
    current = list(current)
    if len(current) == len(items) and all(
      a[0] == b[0] and a[1] is b[1] for a, b in zip(current, items)
    ):
      return obj
    impl.clear(obj)
  impl.init(obj, items)
  return obj


def _count_leaves(node) -> int:
  kind = node[0]
  if kind in ('v', 'a'):
    return 1
  if kind in ('n', 'g'):
    return sum(_count_leaves(c) for _, c in node[3])
  if kind in ('l', 'p'):
    return sum(_count_leaves(c) for c in node[2])
  if kind == 'd':
    return sum(_count_leaves(c) for c in node[2])
  return 0


# Sources of attribute values in a Plan.
_OBJ, _STATIC, _ARRAY, _SUBTREE = range(4)


class _ObjsIndex(dict):
  """``index`` for :func:`unflatten_node` backed by the Plan's object list."""

  def __init__(self, objs):
    super().__init__()
    self.objs = objs

  def __missing__(self, i):
    obj = self.objs[i]
    if obj is None:
      raise KeyError(i)
    return obj

  def __setitem__(self, i, obj):
    self.objs[i] = obj


def _getter(positions):
  """A callable returning the sequence of ``seq[p]`` for ``positions`` (a
  C-level ``itemgetter`` when there are several)."""
  if len(positions) > 1:
    return operator.itemgetter(*positions)
  positions = tuple(positions)
  return lambda seq: [seq[p] for p in positions]


class Plan:
  """How to build fresh objects for one graphdef node (root ``'n'``).

  Attributes:
    creates: classes, data names and state flags of every Pytree reachable
      from the root through attributes only (plain Pytrees), with their
      indices.
    variables: indices, leaf positions, classes and metadata of every
      Variable held directly by a plain Pytree.
    subtrees: ``(node, first leaf, last leaf)`` of every attribute value
      that is a container (list, dict, pytree) in traversal order, rebuilt
      with :func:`unflatten_node` after the plain objects exist and before
      any attribute is filled, so that references in either direction
      resolve.
    template_dicts: per plain Pytree (in creation order), its attribute
      dict with static values in place and None where an object, array or
      container goes; each new object gets a copy as its ``__dict__``.
    fills: ``(index, key, kind, payload)`` per attribute holding an array
      (``_ARRAY``, leaf position) or a container (``_SUBTREE``, subtree
      number), set one by one.
    ref_owners, ref_keys, ref_sources: one entry per attribute (of any
      plain Pytree) that references an object: the getters of its owner's
      dict (by creation order) and of the object (by index), and the key;
      all are filled in one C-level pass.
  """

  __slots__ = (
    'create_idx',
    'create_cls',
    'create_data',
    'create_flags',
    'var_idx',
    'var_pos',
    'var_cls',
    'var_meta',
    'subtrees',
    'template_dicts',
    'fills',
    'get_var_leaves',
    'ref_owners',
    'ref_keys',
    'ref_sources',
    'num_index',
    'root',
    'hijax',
  )

  def __init__(self, node, num_index):
    self.num_index = num_index
    self.root = node[2]
    self.create_idx, self.create_cls, self.create_data = [], [], []
    self.create_flags = []  # (creation number, flags) of flagged Pytrees
    self.var_idx, self.var_pos, self.var_cls, self.var_meta = [], [], [], []
    self.subtrees = []
    self.template_dicts = []
    self.fills = []
    self.ref_keys = []
    owners, sources = [], []
    self._build(node, 0, owners, sources)
    self.ref_owners = _getter(owners)
    self.ref_sources = _getter(sources)
    self.get_var_leaves = _getter(self.var_pos)
    # whether some Variable is hijax (made through its primitive)
    self.hijax = any(c in HIJAX_CLASSES for c in self.var_cls)

  def _build(self, node, pos, owners, ref_sources) -> int:
    idx, cls, attrs, data = node[2], node[1], node[3], node[4]
    j = len(self.create_idx)
    self.create_idx.append(idx)
    self.create_cls.append(cls)
    self.create_data.append(data)
    if len(node) > 5:
      self.create_flags.append((j, node[5]))
    self.template_dicts.append(None)
    keys = []
    sources = []
    for k, c in attrs:
      kind = c[0]
      keys.append(k)
      if kind == 'n':
        pos = self._build(c, pos, owners, ref_sources)
        sources.append((_OBJ, c[2]))
      elif kind == 'v':
        self.var_idx.append(c[2])
        self.var_pos.append(pos)
        self.var_cls.append(c[1])
        self.var_meta.append(c[3].items)
        pos += 1
        sources.append((_OBJ, c[2]))
      elif kind == 'r':
        sources.append((_OBJ, c[1]))
      elif kind == 's':
        sources.append((_STATIC, c[1].value))
      elif kind == 'a' and len(c) == 1:
        sources.append((_ARRAY, pos))
        pos += 1
      else:
        count = _count_leaves(c)
        sources.append((_SUBTREE, len(self.subtrees)))
        self.subtrees.append((c, pos, pos + count))
        pos += count
    # Every Pytree gets a template of its attribute dict (static values in
    # place, None where an object, array or container goes), copied whole
    # into the new object; object references are then filled in bulk.
    self.template_dicts[j] = {
      k: src[1] if src[0] == _STATIC else None for k, src in zip(keys, sources)
    }
    self.fills.extend(
      (idx, k, src[0], src[1])
      for k, src in zip(keys, sources)
      if src[0] in (_ARRAY, _SUBTREE)
    )
    for k, src in zip(keys, sources):
      if src[0] == _OBJ:
        owners.append(j)
        self.ref_keys.append(k)
        ref_sources.append(src[1])
    return pos

  def run(self, leaves, raw, index=None, wrap=True):
    """Builds the objects from ``leaves``; returns the root object."""
    objs = [None] * self.num_index
    put = objs.__setitem__
    new = list(map(_new, self.create_cls))
    _consume(
      map(_set, new, _repeat('_pytree__m'), map(PytreeRecord, self.create_data))
    )
    _consume(map(put, self.create_idx, new))
    for j, flags in self.create_flags:
      set_state_flags(new[j], flags)
    var_leaves = list(self.get_var_leaves(leaves))
    if raw or (wrap and not all(map(_is_variable, var_leaves))):
      variables = []
      hijax = self.hijax
      for leaf, cls, meta in zip(var_leaves, self.var_cls, self.var_meta):
        # (``isinstance`` also accepts a traced hijax Variable)
        if raw or not isinstance(leaf, Variable):
          if hijax and cls in HIJAX_CLASSES:
            var = _new_hijax(cls, leaf, meta)
          else:
            var = _new(cls)
            store_raw_value(var, leaf)
            _set(var, '_var_metadata', dict(meta))
            record_trace(var)
          leaf = var
        variables.append(leaf)
      var_leaves = variables
    _consume(map(put, self.var_idx, var_leaves))
    sub_values = []
    if self.subtrees:
      sub_index = _ObjsIndex(objs)
      for node, start, stop in self.subtrees:
        sub_values.append(
          unflatten_node(
            node, iter(leaves[start:stop]), sub_index, None, raw, wrap
          )
        )
    dicts = list(map(dict.copy, self.template_dicts))
    _consume(map(_set, new, _repeat('__dict__'), dicts))
    for idx, key, kind, payload in self.fills:
      if kind == _ARRAY:
        value = leaves[payload]
        if not raw and _is_variable(value):
          value = value._raw_value
      else:
        value = sub_values[payload]
      vars(objs[idx])[key] = value
    _consume(
      map(
        dict.__setitem__,
        self.ref_owners(dicts),
        self.ref_keys,
        self.ref_sources(objs),
      )
    )
    if index is not None:
      index.update((i, o) for i, o in enumerate(objs) if o is not None)
    return objs[self.root]


def plan_of(graphdef) -> Plan:
  """The cached :class:`Plan` of a GraphDef whose root is a Pytree."""
  plan = graphdef._plan
  if plan is None:
    plan = Plan(graphdef.node, graphdef.num_index)
    _set(graphdef, '_plan', plan)
  return plan


def unflatten(graphdef, leaves, *, index=None, reuse=None, raw=True, wrap=True):
  """Rebuilds the object described by ``graphdef`` from its leaves."""
  node = graphdef.node
  if reuse is None and node[0] == 'n':
    if type(leaves) is not list:
      leaves = list(leaves)
    return plan_of(graphdef).run(leaves, raw, index, wrap)
  if index is None:
    index = {}
  return unflatten_node(node, iter(leaves), index, reuse, raw, wrap)
