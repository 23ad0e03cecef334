"""Graph operations built on the one traversal of :mod:`flax.nnx.graphlib`:
``flatten``/``unflatten``, ``map``, ``recursive_map``, ``as_pure``,
``unpack``/:class:`GraphState`, and the identity maps they share
(:class:`RefMap`, :class:`IndexMap`).

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class M(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2))
>>> graphdef, flat = nnx.flatten(M())
>>> flat.paths
(('w',),)
>>> nnx.unflatten(graphdef, flat).w[...].tolist()
[1.0, 1.0]
"""

import typing as tp
from collections.abc import MutableMapping

import jax

from flax.nnx import rebuildlib
from flax.nnx.deprecations import deprecated
from flax.nnx.flattenlib import _Flattener, _sorted_items
from flax.nnx.graphpaths import cache_paths
from flax.nnx._common import graph_mode_default
from flax.nnx.graphcore import GraphDef, GraphState, _leaves_for, _rebuild
from flax.nnx.graphcore import _tree_graphdef_of, flat_view, merge, split
from flax.nnx.graphcore import tree_parts
from flax.nnx.graphwalk import _duplicates_message, check_tree
from flax.nnx.graphwalk import find_duplicates
from flax.nnx.pytreelib import Pytree, PytreeRecord
from flax.nnx.pytreelib import set_state_flags, state_flags
from flax.nnx.statelib import FlatState
from flax.nnx.variablelib import Variable
from flax.nnx.variablelib import store_raw_value
from flax.nnx._variable_tree import record_trace

A = tp.TypeVar('A')


class RefMap(MutableMapping):
  """A mapping keyed by object identity (objects need not be hashable).

  >>> from flax.nnx.graphops import RefMap
  >>> a, b = [], []
  >>> m = RefMap([(a, 0)])
  >>> a in m, b in m
  (True, False)
  """

  def __init__(self, mapping=None, /):
    self._items: dict = {}
    if mapping is not None:
      items = mapping.items() if hasattr(mapping, 'items') else mapping
      for key, value in items:
        self[key] = value

  def __getitem__(self, key):
    return self._items[id(key)][1]

  def __setitem__(self, key, value):
    self._items[id(key)] = (key, value)

  def __delitem__(self, key):
    del self._items[id(key)]

  def __contains__(self, key):
    return id(key) in self._items

  def __iter__(self):
    return (key for key, _ in self._items.values())

  def __len__(self):
    return len(self._items)

  def get(self, key, default=None):
    entry = self._items.get(id(key))
    return default if entry is None else entry[1]

  def items(self):
    return _RefItems(self)

  def __repr__(self):
    return f'RefMap({[(k, v) for k, v in self._items.values()]!r})'

  @staticmethod
  def from_indexmap(indexmap) -> 'RefMap':
    """The inverse of an :class:`IndexMap` (object -> index)."""
    return RefMap((obj, index) for index, obj in indexmap.items())


class _RefItems(tp.ItemsView):
  def __iter__(self):
    return iter(self._mapping._items.values())


PythonRefMap = RefMap


class IndexMap(dict):
  """A dict index -> object (the inverse of a :class:`RefMap`)."""

  @staticmethod
  def from_refmap(refmap) -> 'IndexMap':
    return IndexMap((index, obj) for obj, index in refmap.items())


def _leaf_value(leaf):
  return leaf if isinstance(leaf, Variable) else leaf._raw_value


def _raw(leaf):
  return leaf._raw_value


def flatten(
  node,
  /,
  *,
  with_paths: bool = True,
  ref_index=None,
  ref_outer_index=None,
  graph=None,
):
  """Flattens ``node`` into its GraphDef and its leaves.

  Returns ``(graphdef, flat_state)`` where ``flat_state`` is a
  :class:`FlatState` of the node's own Variables (``with_paths=True``) or a
  list of their raw values (``with_paths=False``).

  Args:
    node: a graph node (or a pytree holding some).
    with_paths: return a FlatState (paths and Variables) rather than a
      list of raw values.
    ref_index: a :class:`RefMap` shared across calls: objects already in it
      become references to their index in the GraphDef, and the objects met
      are added to it.
    ref_outer_index: a :class:`RefMap` object -> outer index recorded in the
      GraphDef (see ``GraphDef.with_matching_outer_index``).
    graph: graph mode (default) or tree mode (``False``: ``node`` is
      flattened as a JAX pytree, every pytree leaf is a leaf of the state
      and shared references raise; ``ref_index`` and ``ref_outer_index``
      are left as they are, a tree having no references to share).
  """
  if graph is False or (graph is None and not graph_mode_default()):
    parts = tree_parts(node)
    graphdef = _tree_graphdef_of(parts)
    if with_paths:
      return graphdef, FlatState.from_sorted_keys_values(
        parts.paths, parts.leaves
      )
    return graphdef, list(parts.leaves)
  if ref_index is None and ref_outer_index is None:
    view = flat_view(node)
    graphdef = view.graphdef
    paths, leaves, nodes = view.paths, view.leaves, None
  else:
    f = _Flattener(start=len(ref_index) if ref_index else 0)
    if ref_index:
      f.visited.update((id(obj), i) for obj, i in ref_index.items())
    root = f.visit_root(node)
    graphdef = GraphDef._create(root, len(f.leaves), f.counter)
    paths, leaves, nodes = f.paths, f.leaves, f.nodes
    if ref_index is not None:
      for i, obj in nodes:
        ref_index[obj] = i
    if ref_outer_index is not None:
      outer = tuple(
        (i, ref_outer_index[obj]) for i, obj in nodes if obj in ref_outer_index
      )
      graphdef = graphdef._replace(outer=outer or None)
    cache_paths(graphdef, paths)
  if with_paths:
    values = [_leaf_value(leaf) for leaf in leaves]
    return graphdef, FlatState.from_sorted_keys_values(paths, values)
  return graphdef, [leaf._raw_value for leaf in leaves]


def unflatten(
  graphdef,
  state,
  /,
  *,
  index_ref=None,
  outer_index_outer_ref=None,
  copy_variables: bool = False,
  recreate_variables: bool = True,
):
  """Rebuilds the object described by ``graphdef`` from ``state`` (a State,
  a FlatState or a list of leaves in GraphDef order).

  Args:
    graphdef: the GraphDef.
    state: the leaves. Variables are used as they are (copied with
      ``copy_variables=True``); plain values are wrapped in new Variables
      of the GraphDef's types (or placed as they are with
      ``recreate_variables=False``).
    index_ref: an :class:`IndexMap` shared across calls: references of the
      GraphDef to indices already in it resolve to those objects, and the
      objects created are added to it.
    outer_index_outer_ref: ``{outer index: existing object}``: objects of
      the GraphDef with one of these outer indices are updated in place
      instead of created.
    copy_variables: copy the Variables of ``state``.
    recreate_variables: wrap plain leaves in new Variables.
  """
  if not isinstance(graphdef, GraphDef):
    raise TypeError(
      f'unflatten expects a GraphDef, got {type(graphdef).__name__}.'
    )
  leaves = _leaves_for(graphdef, (state,))
  if copy_variables:
    leaves = [v.copy() if isinstance(v, Variable) else v for v in leaves]
  reuse = None
  if outer_index_outer_ref:
    outer = graphdef.outer
    if outer == 'same':
      pairs = ((i, i) for i in range(graphdef.num_index))
    else:
      pairs = outer or ()
    reuse = {
      i: outer_index_outer_ref[o]
      for i, o in pairs
      if o in outer_index_outer_ref
    }
  if index_ref is None and not reuse:
    return rebuildlib.unflatten(
      graphdef, leaves, raw=False, wrap=recreate_variables
    )
  index = index_ref if index_ref is not None else IndexMap()
  return rebuildlib.unflatten_node(
    graphdef.node, iter(leaves), index, reuse, False, recreate_variables
  )


def map(f, node: A, /, *, graph=None, recreate_variables: bool = True) -> A:  # noqa: A001
  """A new graph like ``node`` whose leaves are ``f(path, leaf)``.

  ``f`` gets the Variables of ``node``; a Variable it returns is used as it
  is, another value is wrapped in a new Variable of the original type
  (``recreate_variables=True``).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(2))
  >>> m2 = nnx.map(lambda path, v: v[...] * 2, M())
  >>> type(m2.w).__name__, m2.w[...].tolist()
  ('Param', [2.0, 2.0])
  """
  graphdef, state = split(node, graph=graph)
  return merge(graphdef, state.map(f), recreate_variables=recreate_variables)


def recursive_map(f, node, /, *, graph=None):
  """Rebuilds ``node`` bottom-up, replacing every value by
  ``f(path, value)``.

  Children are mapped before their parent (which ``f`` then gets rebuilt
  with the mapped children); graph nodes are new objects; an object
  reachable through several paths is mapped once.

  >>> from flax import nnx
  >>> nnx.recursive_map(lambda path, x: x * 10 if isinstance(x, int) else x,
  ...                   {'a': 1, 'b': [2, 3]})
  {'a': 10, 'b': [20, 30]}
  """
  if graph is None:
    graph = graph_mode_default()
  if not graph:
    check_tree(node, 'recursive_map')
  if not graph and find_duplicates(node):
    raise ValueError(_duplicates_message(node, 'recursive_map'))
  done: dict = {}

  def walk(x, path, in_node=False):
    if isinstance(x, (Pytree, Variable)):
      key = id(x)
      if key in done:
        return done[key][1]
    if isinstance(x, Pytree):
      new = object.__new__(type(x))
      m = x._pytree__m
      object.__setattr__(new, '_pytree__m', PytreeRecord(m.data))
      set_state_flags(new, state_flags(x))
      done[id(x)] = (x, new)
      data = m.data
      for k, v in _sorted_items(vars(x)):
        # Tree mode visits the data attributes only (the pytree children).
        vars(new)[k] = walk(v, path + (k,), True) if graph or k in data else v
      out = f(path, new)
      done[id(x)] = (x, out)
      return out
    if isinstance(x, Variable):
      out = f(path, x)
      if (
        graph
        and in_node
        and isinstance(out, Variable)
        and type(out) is not type(x)
      ):
        # Graph mode keeps the Variable types of a node's attributes.
        var = object.__new__(type(x))
        store_raw_value(var, out._raw_value)
        object.__setattr__(var, '_var_metadata', dict(out._var_metadata))
        record_trace(var)
        out = var
      done[id(x)] = (x, out)
      return out
    tx = type(x)
    if tx in (list, tuple):
      return f(path, tx(walk(v, path + (i,)) for i, v in enumerate(x)))
    if tx is dict:
      return f(path, {k: walk(v, path + (k,)) for k, v in x.items()})
    return f(path, x)

  return walk(node, ())


def _pure_leaf(x):
  return x.get_raw_value() if isinstance(x, Variable) else x


def _is_variable(x):
  return isinstance(x, Variable)


def as_pure(tree: A) -> A:
  """Replaces every Variable in ``tree`` by its raw value.

  >>> from flax import nnx
  >>> nnx.as_pure({'w': nnx.Param(1), 'n': [nnx.BatchStat(2), 'x']})
  {'n': [2, 'x'], 'w': 1}
  """
  return jax.tree_util.tree_map(_pure_leaf, tree, is_leaf=_is_variable)


pure = deprecated(as_pure)


def unpack(node, *filters, graph=None):
  """Like :func:`split`, but each State comes with the GraphDef as a
  :class:`GraphState` (one per filter)."""
  graphdef, *states = split(node, *filters, graph=graph)
  out = tuple(GraphState(graphdef, s) for s in states)
  return out[0] if len(out) == 1 else out


def clone(node, variables: bool = True, *, arrays: bool = False, graph=None):
  """Returns a copy of ``node``: new graph nodes, and (``variables=True``)
  new Variables; ``arrays=True`` also copies the arrays they hold.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.zeros(1))
  >>> m = M()
  >>> nnx.clone(m).w is m.w, nnx.clone(m, variables=False).w is m.w
  (False, True)
  """
  if graph is False or (graph is None and not graph_mode_default()):
    # tree mode: the node is rebuilt from its pytree leaves
    parts = tree_parts(node)
    graphdef, found, value_of = (
      _tree_graphdef_of(parts),
      parts.leaves,
      _identity,
    )
  else:
    view = flat_view(node)
    graphdef, found, value_of = view.graphdef, view.leaves, _raw
  copy_array = _copy_array if arrays else _identity
  leaves = []
  for leaf in found:
    if isinstance(leaf, Variable):
      if variables:
        leaf = leaf.copy()
        if arrays:
          store_raw_value(leaf, copy_array(leaf._raw_value))
    else:
      leaf = copy_array(value_of(leaf))
    leaves.append(leaf)
  return _rebuild(graphdef, leaves, raw=False)


def _identity(x):
  return x


def _copy_array(x):
  if isinstance(x, jax.Array):
    return x.copy()
  if hasattr(x, 'copy'):
    return x.copy()
  return x


def call(graphdef_state, /):
  """Calls a method of the object in ``(graphdef, state)`` purely: the
  proxy returned replays attribute/item accesses on a merged copy and
  returns ``(out, (graphdef, state))`` with the updated state.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class Counter(nnx.Module):
  ...   def __init__(self):
  ...     self.n = nnx.BatchStat(jnp.array(0))
  ...   def inc(self):
  ...     self.n[...] += 1
  ...     return self.n[...]
  >>> out, (g, s) = nnx.call(nnx.split(Counter())).inc()
  >>> int(out), int(s['n'][...])
  (1, 1)
  """
  graphdef, *states = graphdef_state
  return graphdef.apply(*states)
