"""Split, merge and update contexts: share object identities across
several ``split``/``merge`` calls, and carry updates made inside a
function (e.g. a JAX transform) back to the original objects.

Inside one :func:`split_context`, an object split twice is a reference the
second time; inside one :func:`merge_context`, such a reference resolves
to the object the first merge created. An :func:`update_context` links an
outer split, an inner merge and split, and an outer merge, so that the
outer merge updates the original objects in place.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class M(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(1))
>>> m = M()
>>> with nnx.update_context('example'):
...   with nnx.split_context('example') as ctx:
...     graphdef, state = ctx.split(m)
...   with nnx.merge_context('example', True) as ctx:
...     inner = ctx.merge(graphdef, state)
...   inner.w[...] = jnp.zeros(1)
...   with nnx.split_context('example') as ctx:
...     graphdef, state = ctx.split(inner)
...   with nnx.merge_context('example', False) as ctx:
...     outer = ctx.merge(graphdef, state)
>>> outer is m, m.w[...].tolist()
(True, [0.0])
"""

import contextlib
import dataclasses
import functools
import threading
import typing as tp

from flax.nnx import filterlib
from flax.nnx._common import _CONTEXT
from flax.nnx.graphnodes import NO_UPDATE, ArrayRefOutput
from flax.nnx.graphnodes import IndexesPytreeDef as IndexesPytreeDef
from flax.nnx.graphops import IndexMap, RefMap, flatten, unflatten
from flax.nnx.statelib import FlatState, State, node_state
from flax.nnx.variablelib import Variable
from flax.nnx._variable_tree import is_ref


class GraphContext(threading.local):
  """Per-thread stacks of the graph contexts (and of the graph mode /
  graph updates settings)."""

  def __init__(
    self,
    update_context_stacks=None,
    ref_index_stack=None,
    index_ref_stack=None,
    tmp_static_cache=None,
    caching: bool = False,
    graph_mode_stack=None,
    graph_updates_stack=None,
  ):
    self.update_context_stacks: dict = update_context_stacks or {}
    self.ref_index_stack: list = ref_index_stack or []
    self.index_ref_stack: list = index_ref_stack or []
    self.tmp_static_cache = tmp_static_cache
    self.caching = caching
    if graph_mode_stack is not None:
      _CONTEXT.graph_mode[:] = graph_mode_stack
    if graph_updates_stack is not None:
      _CONTEXT.graph_updates[:] = graph_updates_stack

  @property
  def graph_mode_stack(self) -> list:
    """The stack of :class:`set_graph_mode` values of this thread."""
    return _CONTEXT.graph_mode

  @property
  def graph_updates_stack(self) -> list:
    """The stack of :class:`set_graph_updates` values of this thread."""
    return _CONTEXT.graph_updates


GRAPH_CONTEXT = GraphContext()


def _split_flat(flat, filters):
  if not filters:
    return (flat,)
  parts = flat.split(*filters)
  return parts if isinstance(parts, tuple) else (parts,)


@dataclasses.dataclass
class SplitContext:
  """Splits several objects sharing one reference index (see
  :func:`split_context`)."""

  ctxtag: tp.Hashable | None
  ref_index: RefMap
  is_inner: bool | None

  def _outer_index(self):
    if self.ctxtag is None or not self.is_inner:
      return None
    return current_update_context(self.ctxtag).inner_ref_outer_index

  def flatten(self, node, *filters, with_paths: bool = True):
    """``(graphdef, flat_state, ...)``: like ``nnx.flatten``, one
    FlatState per filter, objects seen before in this context as
    references. A node found in the :func:`static_cache` of the active
    update context is not traversed: its cached structure is used."""
    if not with_paths and filters:
      raise ValueError('flatten: filters need with_paths=True.')
    outer_index = self._outer_index()
    cached = self._cached(node)
    if cached is not None:
      variables = list(cached.variables)
      if outer_index is not None:
        variables = _mark_refs(variables, outer_index)
      if not with_paths:
        return cached.graphdef, [v.get_raw_value() for v in variables]
      flat = FlatState.from_sorted_keys_values(cached.paths, variables)
      return (cached.graphdef, *_split_flat(flat, filters))
    graphdef, flat = flatten(
      node,
      # (an inner split marks the Refs of Variables: it needs them)
      with_paths=with_paths or outer_index is not None,
      ref_index=self.ref_index,
      ref_outer_index=outer_index or RefMap(),
    )
    if outer_index is not None:
      leaves = _mark_refs(flat._leaves, outer_index)
      if not with_paths:
        return graphdef, [
          x._raw_value if isinstance(x, Variable) else x for x in leaves
        ]
      if leaves is not flat._leaves:
        flat = FlatState.from_sorted_keys_values(flat._paths, leaves)
    if not with_paths:
      return graphdef, flat
    return (graphdef, *_split_flat(flat, filters))

  def _cached(self, node):
    """The StaticCache entry of ``node`` (with the graphdef this split
    records), or None when there is no cache, no entry, or ``node`` was
    already met in this context."""
    if self.ctxtag is None:
      return None
    cache = current_update_context(self.ctxtag).static_cache
    if not cache or node in self.ref_index:
      return None
    try:
      entry = cache.get(node)
    except TypeError:  # an unhashable node (a list, a dict) is not cached
      return None
    if entry is None:
      return None
    self.ref_index.update(entry.new_ref_index.items())
    if self.is_inner:
      return entry._replace(graphdef=entry.final_graphdef)
    return entry

  def split(self, node, *filters):
    """``(graphdef, state, ...)``: like ``nnx.split`` within the context."""
    if filters:
      filterlib.filters_to_predicates(filters)
    graphdef, *flats = self.flatten(node, *filters)
    return (
      graphdef,
      *(node_state(list(f._paths), list(f._leaves)) for f in flats),
    )


def _mark_refs(leaves, passed_in: RefMap) -> list:
  """The leaves of an inner split of an update context with their array
  references (``jax.Ref``, which cannot leave a JAX trace) replaced by
  markers, as Flax 0.12.8: a Ref the function was given (a raw Ref, or
  the Ref of a Variable, found in ``passed_in``: what the inner merge
  made) by :class:`NoUpdate`, the outer merge keeping the original;
  another one by an :class:`ArrayRefOutput` of its value, of which the
  outer merge makes a new Ref. A marked Variable is a copy (``ref=True``
  kept): unlike Flax 0.12.8, the objects split keep their Refs (a
  captured outer object stays usable). Returns ``leaves`` itself when
  nothing is marked."""
  out = None
  for i, x in enumerate(leaves):
    if isinstance(x, Variable):
      raw = getattr(x, '_raw_value', None)
      if not is_ref(raw):
        continue
      given = x in passed_in
      new = x.copy(
        NO_UPDATE if given else ArrayRefOutput(raw[...]), _copy_ref=False
      )
    elif is_ref(x):
      new = NO_UPDATE if x in passed_in else ArrayRefOutput(x[...])
    else:
      continue
    if out is None:
      out = list(leaves)
    out[i] = new
  return leaves if out is None else out


@contextlib.contextmanager
def split_context(ctxtag: tp.Hashable | None = None):
  """A context whose :class:`SplitContext` shares references across splits.

  With ``ctxtag`` it takes part in the active :func:`update_context` of
  that tag (a ValueError if there is none).
  """
  update = current_update_context(ctxtag) if ctxtag is not None else None
  is_inner = None if update is None else update.inner_merged
  ctx = SplitContext(ctxtag, RefMap(), is_inner)
  GRAPH_CONTEXT.ref_index_stack.append(ctx)
  try:
    yield ctx
  except BaseException:
    _close(ctx, 'ref_index')
    raise
  finally:
    GRAPH_CONTEXT.ref_index_stack.pop()
  if update is not None:
    update.flatten_end(ctx.ref_index)
  _close(ctx, 'ref_index')


def _close(ctx, index_name):
  """Drops what a split or merge context shared once its block ends (its
  reference index and tag): the context object cannot be used again."""
  for name in (index_name, 'ctxtag'):
    if name in vars(ctx):
      delattr(ctx, name)


@dataclasses.dataclass
class MergeContext:
  """Merges several GraphDefs sharing one index of created objects (see
  :func:`merge_context`)."""

  ctxtag: tp.Hashable | None
  index_ref: IndexMap
  is_inner: bool | None

  def _outer_refs(self):
    if self.ctxtag is None or self.is_inner is not False:
      return None
    return current_update_context(self.ctxtag).outer_index_outer_ref

  def merge(self, graphdef, state, /, *states):
    """Rebuilds an object; references resolve to objects merged before in
    this context."""
    if states:
      state = State.merge(state, *states)
    return self.unflatten(graphdef, state)

  def unflatten(self, graphdef, flat_state, /, *flat_states):
    """Like :meth:`merge` with FlatStates (or a list of leaves)."""
    if flat_states:
      flat_state = FlatState.merge(flat_state, *flat_states)
    outer = self._outer_refs()
    return unflatten(
      graphdef,
      flat_state,
      index_ref=self.index_ref,
      outer_index_outer_ref=outer,
      copy_variables=outer is None,
    )


@contextlib.contextmanager
def merge_context(ctxtag: tp.Hashable | None = None, inner: bool | None = None):
  """A context whose :class:`MergeContext` resolves references across
  merges. ``inner`` says whether this merge happens inside the function of
  the active :func:`update_context` of ``ctxtag`` (True) or outside, after
  it (False: the original objects are updated in place)."""
  update = current_update_context(ctxtag) if ctxtag is not None else None
  if update is not None and inner is None:
    inner = not update.inner_merged
  ctx = MergeContext(ctxtag, IndexMap(), inner)
  GRAPH_CONTEXT.index_ref_stack.append(ctx)
  try:
    yield ctx
  except BaseException:
    _close(ctx, 'index_ref')
    raise
  finally:
    GRAPH_CONTEXT.index_ref_stack.pop()
  if update is not None:
    update.unflatten_end(ctx.index_ref, bool(inner))
  _close(ctx, 'index_ref')


_OptRefMap = tp.Optional[RefMap]
_OptIndexMap = tp.Optional[IndexMap]


@dataclasses.dataclass
class UpdateContext:
  """What links the splits and merges of one :func:`update_context`."""

  tag: tp.Hashable
  outer_ref_outer_index: _OptRefMap
  outer_index_inner_ref: _OptIndexMap
  outer_index_outer_ref: _OptIndexMap
  inner_ref_outer_index: _OptRefMap
  static_cache: tp.MutableMapping | None

  @property
  def inner_merged(self) -> bool:
    return self.inner_ref_outer_index is not None

  def flatten_end(self, ref_index: RefMap):
    """Records the objects of an outer split (before any inner merge)."""
    if self.inner_merged:
      return
    if self.outer_ref_outer_index is None:
      self.outer_ref_outer_index = RefMap()
    self.outer_ref_outer_index.update(ref_index.items())
    self.outer_index_outer_ref = IndexMap.from_refmap(
      self.outer_ref_outer_index
    )

  def unflatten_end(self, index_ref: IndexMap, inner_merge: bool):
    """Records the objects an inner merge created (by outer index)."""
    if not inner_merge:
      return
    if self.outer_index_inner_ref is None:
      self.outer_index_inner_ref = IndexMap()
    self.outer_index_inner_ref.update(index_ref)
    self.inner_ref_outer_index = RefMap.from_indexmap(
      self.outer_index_inner_ref
    )


_LINKS = (
  'outer_ref_outer_index',
  'outer_index_inner_ref',
  'outer_index_outer_ref',
  'inner_ref_outer_index',
)


class UpdateContextManager:
  """Enters a new :class:`UpdateContext` for ``tag`` (a context manager or
  a decorator)."""

  def __init__(self, tag: tp.Hashable):
    self.tag = tag

  def __enter__(self):
    # A pending ``static_cache`` is consumed by the next update context.
    cache = GRAPH_CONTEXT.tmp_static_cache
    GRAPH_CONTEXT.tmp_static_cache = None
    ctx = UpdateContext(self.tag, None, None, None, None, cache)
    GRAPH_CONTEXT.update_context_stacks.setdefault(self.tag, []).append(ctx)
    return ctx

  def __exit__(self, *args):
    stack = GRAPH_CONTEXT.update_context_stacks[self.tag]
    ctx = stack.pop()
    if not stack:
      del GRAPH_CONTEXT.update_context_stacks[self.tag]
    # What linked the splits and merges is dropped with the context; its
    # tag and static cache stay.
    for name in _LINKS:
      if name in vars(ctx):
        delattr(ctx, name)

  def __call__(self, f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
      with self:
        return f(*args, **kwargs)

    return wrapper


def update_context(tag: tp.Hashable) -> UpdateContextManager:
  """Links the splits and merges tagged ``tag`` made while it is active."""
  return UpdateContextManager(tag)


def current_update_context(tag: tp.Hashable) -> UpdateContext:
  """The innermost active :class:`UpdateContext` of ``tag``."""
  stack = GRAPH_CONTEXT.update_context_stacks.get(tag)
  if not stack:
    raise ValueError(f'No update context found for tag {tag!r}.')
  return stack[-1]


class StaticCache(tp.NamedTuple):
  """The split of a graph node whose structure is known not to change,
  kept in a :func:`static_cache` so that splits in an update context skip
  its traversal.

  Attributes:
    graphdef: the GraphDef of the node.
    final_graphdef: the same GraphDef with every outer index equal to its
      index (what an inner split records).
    paths: the paths of the node's Variables, sorted.
    variables: the node's Variables, in the order of ``paths``.
    new_ref_index: object -> index of every object of the node.
    new_index_ref: index -> object, the inverse of ``new_ref_index``.
  """

  graphdef: tp.Any
  final_graphdef: tp.Any
  paths: tuple
  variables: list
  new_ref_index: RefMap
  new_index_ref: IndexMap

  @staticmethod
  def create(graphdef, paths, variables, new_ref_index):
    """A StaticCache of a node split as ``graphdef``, ``paths`` and
    ``variables``, with ``new_ref_index`` mapping its objects to their
    indices.

    >>> from flax import nnx
    >>> import jax.numpy as jnp
    >>> from flax.nnx import graph
    >>> class M(nnx.Module):
    ...   def __init__(self):
    ...     self.w = nnx.Param(jnp.ones(2))
    >>> m = M()
    >>> ref_index = graph.RefMap()
    >>> graphdef, flat = graph.flatten(m, ref_index=ref_index)
    >>> entry = graph.StaticCache.create(
    ...   graphdef, flat.paths, list(flat.leaves), ref_index
    ... )
    >>> entry.new_index_ref[0] is m, entry.final_graphdef.nodes[0].outer_index
    (True, 0)
    """
    return StaticCache(
      graphdef,
      graphdef.with_same_outer_index(),
      tuple(paths),
      list(variables),
      new_ref_index,
      IndexMap.from_refmap(new_ref_index),
    )


@contextlib.contextmanager
def static_cache(static_cache: tp.MutableMapping[tp.Any, StaticCache]):
  """Hands ``static_cache`` (node -> :class:`StaticCache`) to the next
  :func:`update_context` entered in its body: splits in that context use
  the cached structure of the nodes it holds instead of traversing them.
  Leaving the body with the cache unconsumed is a ValueError.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> from flax.nnx import graph
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(2))
  >>> m = M()
  >>> ref_index = graph.RefMap()
  >>> graphdef, flat = graph.flatten(m, ref_index=ref_index)
  >>> cache = {m: graph.StaticCache.create(
  ...   graphdef, flat.paths, list(flat.leaves), ref_index)}
  >>> with graph.static_cache(cache):
  ...   with nnx.update_context('step'):
  ...     with nnx.split_context('step') as ctx:
  ...       g, state = ctx.split(m)
  >>> g is graphdef, state['w'] is m.w
  (True, True)
  """
  GRAPH_CONTEXT.tmp_static_cache = static_cache
  try:
    yield
  except BaseException:
    GRAPH_CONTEXT.tmp_static_cache = None
    raise
  if GRAPH_CONTEXT.tmp_static_cache is not None:
    GRAPH_CONTEXT.tmp_static_cache = None
    raise ValueError(
      'GRAPH_CONTEXT.tmp_static_cache should be None, no context consumed '
      'it: enter an update context (nnx.update_context or a transform that '
      'uses one) inside `static_cache`.'
    )
