"""The NNX graph: flatten objects into a GraphDef plus their Variables.

Structural work happens once per graph structure: every Pytree root keeps
a cached *flat view* (graphdef, ordered leaves, paths) that stays valid
until an attribute of one of its nodes is set or deleted (or Variable
metadata changes). ``split`` / ``state`` / ``update`` on an unchanged graph
only read or write the leaves.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class Foo(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2))
...     self.count = nnx.BatchStat(jnp.array(0))
>>> graphdef, params, rest = nnx.split(Foo(), nnx.Param, ...)
>>> sorted(params.keys()), sorted(rest.keys())
(['w'], ['count'])
>>> foo = nnx.merge(graphdef, params, rest)
>>> foo.w.value.tolist()
[1.0, 1.0]
"""

import collections
import itertools
import operator
import typing as tp

import jax

from flax.nnx import filterlib, rebuildlib
from flax.nnx._common import EPOCH, META_EPOCH
from flax.nnx.flattenlib import (  # noqa: F401 - re-exported
  _ARRAY_TYPES,
  _EMPTY_META,
  _ArraySlot,
  _containers_unchanged,
  _Flattener,
  _key_of,
  _Meta,
  _set_in,
  _sorted_items,
  _Static,
)
from flax.nnx.pytreelib import M_VERSION, M_VIEW, Pytree
from flax.nnx.statelib import State
from flax.nnx.variablelib import Variable

_is_variable = Variable.__instancecheck__
_raw = operator.attrgetter('raw_value')
_meta = operator.attrgetter('_var_metadata')
_meta_of = operator.attrgetter('_pytree__m')
_repeat = itertools.repeat
_consume = collections.deque(maxlen=0).extend


class GraphDef:
  """The static structure of a graph: node types, attribute names, static
  values, Variable types/metadata and shared references.

  Hashable, so it can be a static argument of ``jax.jit``.
  """

  __slots__ = ('node', 'num_leaves', 'num_index', '_hash', '_plan')

  def __init__(self, node, num_leaves, num_index):
    self.node = node
    self.num_leaves = num_leaves
    self.num_index = num_index
    self._hash = None
    self._plan = None

  def __eq__(self, other):
    return isinstance(other, GraphDef) and (
      self is other or self.node == other.node
    )

  def __hash__(self):
    h = self._hash
    if h is None:
      h = self._hash = hash(self.node)
    return h

  def __repr__(self):
    return f'GraphDef({_node_repr(self.node)})'

  def merge(self, state, /, *states):
    return merge(self, state, *states)

  def apply(self, state, /, *states):
    """Returns an :class:`ApplyCaller` that calls methods purely."""
    return ApplyCaller(self, State.merge(state, *states))

  def __reduce__(self):
    return (GraphDef, (self.node, self.num_leaves, self.num_index))


NodeDef = GraphDef


def _node_repr(node):
  kind = node[0]
  if kind == 'n':
    return f'{node[1].__name__}#{node[2]}'
  if kind == 'v':
    return f'{node[1].__name__}#{node[2]}'
  return kind


class _View:
  """Cached flat view of a graph root."""

  __slots__ = (
    'epoch',
    'meta_epoch',
    'graphdef',
    'leaves',
    'paths',
    'nodes',
    'versions',
    'containers',
    'all_variables',
    'tree_ok',
    'ids',
    'masks',
    'path_index',
  )


def _build_view(root) -> _View:
  f = _Flattener()
  node = f.visit(root, ())
  view = _View()
  view.epoch = EPOCH.value
  view.meta_epoch = META_EPOCH.value
  view.graphdef = GraphDef(node, len(f.leaves), f.counter)
  view.leaves = f.leaves
  view.paths = f.paths
  view.nodes = [obj for _, obj in f.nodes]
  view.versions = [(m, m[M_VERSION]) for m in map(_meta_of, f.versions)]
  view.containers = f.containers
  view.all_variables = all(map(_is_variable, f.leaves))
  # Lets merge(graphdef, state-from-split) match paths by identity.
  if len(_PATHS_CACHE) > 4096:
    _PATHS_CACHE.clear()
  _PATHS_CACHE[view.graphdef] = view.paths
  view.tree_ok = None
  view.ids = None
  view.masks = {}
  view.path_index = None
  return view


def flat_view(root) -> _View:
  """The cached flat view of ``root`` (rebuilt if its structure changed).

  The view is valid while no attribute of its Pytrees was set or deleted,
  no Variable metadata changed and its containers hold the same objects.
  """
  if isinstance(root, Pytree):
    view = root._pytree__m[M_VIEW]
    if view is not None:
      if view.meta_epoch == META_EPOCH.value and (
        view.epoch == EPOCH.value
        or all(m[M_VERSION] == v for m, v in view.versions)
      ):
        if not view.containers or _containers_unchanged(view.containers):
          view.epoch = EPOCH.value
          return view
    view = _build_view(root)
    root._pytree__m[M_VIEW] = view
    return view
  return _build_view(root)


def view_ids(view: _View) -> frozenset:
  ids = view.ids
  if ids is None:
    ids = view.ids = frozenset(map(id, view.nodes))
  return ids


def view_mask(view: _View, predicates: tuple) -> list:
  """Index of the first matching predicate for every leaf (cached)."""
  mask = view.masks.get(predicates)
  if mask is None:
    mask = []
    n = len(predicates)
    for path, leaf in zip(view.paths, view.leaves):
      value = leaf if isinstance(leaf, Variable) else leaf.raw_value
      for i, pred in enumerate(predicates):
        if pred(path, value):
          mask.append(i)
          break
      else:
        mask.append(n)
    view.masks[predicates] = mask
  return mask


def is_graph_node(x) -> bool:
  return isinstance(x, Pytree)


def is_node(x) -> bool:
  return isinstance(x, (Pytree, Variable))


# -- unflatten ------------------------------------------------------------------

_unflatten = rebuildlib.unflatten_node
unflatten = rebuildlib.unflatten


# -- public API -------------------------------------------------------------------


def _copy_variables(variables) -> list:
  """Copies of ``variables`` (same types, values and metadata), made with
  C-level loops only."""
  new = list(map(object.__new__, map(type, variables)))
  _consume(
    map(object.__setattr__, new, _repeat('raw_value'), map(_raw, variables))
  )
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
      else leaf.raw_value
      for leaf in leaves
    ]
  if not filters:
    return [State._from_flat(view.paths, values)]
  predicates = filterlib.filters_to_predicates(filters)
  mask = view_mask(view, predicates)
  n = len(predicates)
  buckets = [([], []) for _ in range(n)]
  for m, path, value in zip(mask, view.paths, values):
    if m == n:
      continue
    buckets[m][0].append(path)
    buckets[m][1].append(value)
  return [State._from_flat(p, v) for p, v in buckets]


def _check_exhaustive(view, filters):
  predicates = filterlib.filters_to_predicates(filters)
  mask = view_mask(view, predicates)
  n = len(predicates)
  for m, path in zip(mask, view.paths):
    if m == n:
      raise ValueError(
        f'Non-exhaustive filters: the value at path {path!r} is matched by '
        f'none of {filters!r}; add `...` as the last filter to collect the '
        'rest.'
      )


def split(node, *filters):
  """Splits a graph node into a :class:`GraphDef` and one State per filter.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.zeros(1))
  >>> graphdef, state = nnx.split(M())
  >>> list(state.keys())
  ['w']
  """
  view = flat_view(node)
  if filters:
    _check_exhaustive(view, filters)
  states = _states_from_view(view, filters)
  return (view.graphdef, *states)


def state(node, *filters):
  """Returns the State of ``node`` (one State per filter if several).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.zeros(1))
  ...     self.s = nnx.BatchStat(jnp.zeros(1))
  >>> list(nnx.state(M(), nnx.BatchStat).keys())
  ['s']
  """
  view = flat_view(node)
  states = _states_from_view(view, filters)
  return states[0] if len(states) == 1 else tuple(states)


def variables(node, *filters):
  """Like :func:`state` but the State holds the graph's own Variables."""
  view = flat_view(node)
  states = _states_from_view(view, filters, copy=False)
  return states[0] if len(states) == 1 else tuple(states)


def graphdef(node) -> GraphDef:
  """Returns the :class:`GraphDef` of ``node``."""
  return flat_view(node).graphdef


def _leaves_for(graphdef: GraphDef, states) -> list:
  """Orders the leaves of ``states`` as ``graphdef`` expects them."""
  if len(states) == 1:
    s = states[0]
    s = s if isinstance(s, State) else State(s)
    paths, leaves = s._flat_items()
    if len(leaves) == graphdef.num_leaves and _paths_match(graphdef, paths):
      return leaves
  lookup = {}
  for s in states:
    s = s if isinstance(s, State) else State(s)
    paths, leaves = s._flat_items()
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


_PATHS_CACHE: dict = {}


def graphdef_paths(graphdef: GraphDef) -> list:
  paths = _PATHS_CACHE.get(graphdef)
  if paths is None:
    paths = []

    def walk(node, path):
      kind = node[0]
      if kind in ('v', 'a'):
        paths.append(path)
      elif kind == 'n':
        for k, c in node[3]:
          walk(c, path + (k,))
      elif kind == 'l':
        for j, c in enumerate(node[2]):
          walk(c, path + (j,))
      elif kind == 'd':
        for k, c in zip(node[1], node[2]):
          walk(c, path + (k,))
      elif kind == 'p':
        for entry, c in zip(_tree_keys(node[1]), node[2]):
          walk(c, path + (entry,))

    walk(graphdef.node, ())
    if len(_PATHS_CACHE) > 4096:
      _PATHS_CACHE.clear()
    _PATHS_CACHE[graphdef] = paths
  return paths


def _tree_keys(treedef):
  dummy = treedef.unflatten([0] * treedef.num_leaves)
  kv, _ = jax.tree_util.tree_flatten_with_path(
    dummy, is_leaf=lambda y: y is not dummy
  )
  return [_key_of(p[0]) for p, _ in kv]


def _paths_match(graphdef, paths) -> bool:
  cached = _PATHS_CACHE.get(graphdef)
  if cached is paths:
    return True
  return list(paths) == graphdef_paths(graphdef)


def merge(graphdef: GraphDef, state, /, *states, copy: bool = False):
  """Rebuilds the object described by ``graphdef`` from the states.

  The Variables of the states become the Variables of the new object (pass
  ``copy=True`` to copy them).
  """
  if not isinstance(graphdef, GraphDef):
    raise TypeError(
      f'merge expects a GraphDef as first argument, got '
      f'{type(graphdef).__name__}; call it as nnx.merge(graphdef, state).'
    )
  leaves = _leaves_for(graphdef, (state, *states))
  if copy:
    leaves = [v.copy() if isinstance(v, Variable) else v for v in leaves]
  return unflatten(graphdef, leaves, raw=False)


def update(node, state, /, *states) -> None:
  """Writes the values of the states into the Variables of ``node``.

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.zeros(2))
  >>> m = M()
  >>> nnx.update(m, jax.tree.map(lambda x: x + 1, nnx.state(m)))
  >>> m.w.value.tolist()
  [1.0, 1.0]
  """
  view = flat_view(node)
  for s in (state, *states):
    if not isinstance(s, State):
      s = State(s)
    paths, leaves = s._flat_items()
    if paths is view.paths and len(leaves) == len(view.leaves):
      for target, leaf in zip(view.leaves, leaves):
        _write(target, leaf)
      continue
    index = view.path_index
    if index is None:
      index = view.path_index = dict(zip(view.paths, view.leaves))
    for path, leaf in zip(paths, leaves):
      target = index.get(path)
      if target is None:
        _set_path(node, path, leaf)
        view = flat_view(node)
        index = view.path_index = dict(zip(view.paths, view.leaves))
      else:
        _write(target, leaf)


def _write(target, leaf):
  if isinstance(target, Variable):
    if isinstance(leaf, Variable):
      meta = leaf._var_metadata
      if meta and meta != target._var_metadata:
        META_EPOCH.value += 1
        target._var_metadata.update(meta)
      object.__setattr__(target, 'raw_value', leaf.raw_value)
    else:
      object.__setattr__(target, 'raw_value', leaf)
  else:
    target.raw_value = leaf.raw_value if isinstance(leaf, Variable) else leaf


def _set_path(node, path, leaf):
  obj = node
  for key in path[:-1]:
    obj = getattr(obj, key) if isinstance(obj, Pytree) else obj[key]
  key = path[-1]
  value = leaf.copy() if isinstance(leaf, Variable) else leaf
  if isinstance(obj, Pytree):
    setattr(obj, key, value)
  else:
    obj[key] = value


def clone(node, **kwargs):
  """Returns a deep copy of ``node`` (new objects and Variables)."""
  view = flat_view(node)
  leaves = [
    leaf.copy() if isinstance(leaf, Variable) else leaf.raw_value
    for leaf in view.leaves
  ]
  return unflatten(view.graphdef, leaves, raw=False)


def pop(node, *filters):
  """Removes the Variables matching ``filters`` from ``node`` and returns
  them as State(s)."""
  if not filters:
    raise ValueError('pop expects at least one filter.')
  view = flat_view(node)
  states = _states_from_view(view, filters, copy=False)
  for s in states:
    for path in s._flat_items()[0]:
      obj = node
      for key in path[:-1]:
        obj = getattr(obj, key) if isinstance(obj, Pytree) else obj[key]
      if isinstance(obj, Pytree):
        delattr(obj, path[-1])
      else:
        del obj[path[-1]]
  return states[0] if len(states) == 1 else tuple(states)


def iter_graph(node, /, *, graph=None):
  """Yields ``(path, value)`` for every node and Variable in ``node``
  (children first, keys sorted, each object once)."""
  seen = set()

  def walk(x, path):
    if isinstance(x, (Pytree, Variable)):
      if id(x) in seen:
        return
      seen.add(id(x))
    if isinstance(x, Pytree):
      for k, v in _sorted_items(vars(x)):
        yield from walk(v, path + (k,))
      yield path, x
    elif isinstance(x, Variable):
      yield path, x
    elif type(x) in (list, tuple):
      for j, v in enumerate(x):
        yield from walk(v, path + (j,))
    elif type(x) is dict:
      for k, v in _sorted_items(x):
        yield from walk(v, path + (k,))
    elif isinstance(x, _ARRAY_TYPES):
      yield path, x

  yield from walk(node, ())


def iter_children(node, /):
  """Yields ``(key, child)`` for the direct Pytree children of ``node``."""
  for k, v in _sorted_items(vars(node)):
    if isinstance(v, Pytree):
      yield k, v


def find_duplicates(node) -> list:
  """Paths of Variables reachable through more than one path."""
  seen: dict = {}
  dups = []

  def walk(x, path):
    if isinstance(x, Variable):
      if id(x) in seen:
        dups.append((seen[id(x)], path))
      else:
        seen[id(x)] = path
    elif isinstance(x, Pytree):
      if id(x) in seen:
        dups.append((seen[id(x)], path))
        return
      seen[id(x)] = path
      for k, v in _sorted_items(vars(x)):
        walk(v, path + (k,))
    elif type(x) in (list, tuple):
      for j, v in enumerate(x):
        walk(v, path + (j,))
    elif type(x) is dict:
      for k, v in _sorted_items(x):
        walk(v, path + (k,))

  walk(node, ())
  return dups


class ApplyCaller:
  """Calls methods of a merged copy and returns ``(out, (graphdef, state))``
  with the updated state."""

  def __init__(self, graphdef, state, path=()):
    self._graphdef = graphdef
    self._state = state
    self._path = path

  def __getattr__(self, name):
    return ApplyCaller(self._graphdef, self._state, self._path + (name,))

  def __call__(self, *args, **kwargs):
    obj = merge(self._graphdef, self._state, copy=True)
    fn = obj
    for name in self._path:
      fn = getattr(fn, name)
    out = fn(*args, **kwargs)
    g, s = split(obj)
    return out, (g, s)


def call(graphdef_state, /):
  """Calls a method of the object in ``(graphdef, state)`` purely.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class Counter(nnx.Module):
  ...   def __init__(self):
  ...     self.n = nnx.BatchStat(jnp.array(0))
  ...   def inc(self):
  ...     self.n[...] += 1
  ...     return self.n[...]
  >>> out, (g, s) = nnx.call(nnx.split(Counter())).inc()
  >>> int(out), int(s['n'].value)
  (1, 1)
  """
  graphdef, state = graphdef_state[0], graphdef_state[1:]
  return ApplyCaller(graphdef, State.merge(*state))


def view(node, /, *, only=None, raise_if_not_found=True, **attributes):
  """Returns a shallow copy of ``node`` sharing its Variables, with
  ``attributes`` set on the (filtered) Modules of the copy."""
  v = flat_view(node)
  leaves = [
    leaf if isinstance(leaf, Variable) else leaf.raw_value for leaf in v.leaves
  ]
  new = unflatten(v.graphdef, leaves, raw=False)
  if attributes:
    from flax.nnx import module as _module

    filters = () if only is None else (only,)
    _module.set_attributes(
      new, *filters, raise_if_not_found=raise_if_not_found, **attributes
    )
  return new


GraphState = tp.Any
