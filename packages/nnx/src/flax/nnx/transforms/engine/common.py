"""Moving graph nodes in and out of JAX transforms: the one engine under
every NNX transform in graph mode.

Outside a transform, :func:`flatten_roots` finds the graph roots of the
arguments (by leaf types, classified once per tuple of types) with their
cached flat views, and :class:`GraphArgs` replaces every graph node by a
:class:`NodeStates` pytree holding the raw values of its leaves (grouped
by filters when asked); the structure (graphdefs) stays on the Python
side. Inside, :class:`InnerGraph` rebuilds fresh objects, and after the
user function it collects the new leaf values (and structure changes) of
the inputs and flattens graph nodes found in the outputs, with references
to input objects kept as references. Back outside, :func:`write_root`
writes the updates into the original objects in one pass and
:func:`rebuild_out` rebuilds the outputs.

``nnx.jit``'s cached fast path (:mod:`.flatcall`) is a calling convention
of this engine: the same extraction, :class:`InnerGraph` inside the trace,
the same write-back and output rebuild, with the NodeStates laid out as
one flat list of arrays. The pytree modes (``graph=False`` /
``graph_updates=False``) are :class:`._fns.PytreeMode`.
"""

import functools
import inspect
import operator
import typing as tp

import jax

from flax import errors
from flax.nnx import graphlib
from flax.nnx._common import (
  EPOCH,
  META_EPOCH,
  MISSING,
  graph_updates_default,
  is_graph_node_leaf,
  resolve_graph,
  trace_state,
)
from flax.nnx.variablelib import _HIJAX_CLASSES
from flax.nnx.flattenlib import _Flattener, _Meta
from flax.nnx.graphcore import _unflatten, leaf_mask
from flax.nnx.graphnodes import GRAPH_NODE_TYPES
from flax.nnx.pytreelib import Pytree
from flax.nnx.transforms.engine import leafplan, varflow
from flax.nnx.transforms.engine import refout
from flax.nnx.variablelib import Variable, store_raw_value, store_raw_values


_flatten = jax.tree_util.tree_flatten
_is_variable = Variable.__instancecheck__
_flat_view = graphlib.flat_view


def _is_node_or_registered(x) -> bool:
  return is_graph_node_leaf(x) or type(x) in GRAPH_NODE_TYPES


def modes_now(graph, graph_updates) -> tuple[bool, bool]:
  """``(graph, graph_updates)`` with the defaults in force now: a function
  made by a decorator transform keeps the modes of the moment it was made
  (``nnx.set_graph_mode`` / ``nnx.set_graph_updates`` later do not change
  it)."""
  if graph_updates is None:
    graph_updates = graph_updates_default()
  return resolve_graph(graph), bool(graph_updates)


def node_leaf_predicate():
  """``is_leaf`` for graph nodes: the C-level Pytree/Variable check, or,
  once types are registered with ``register_graph_node_type``, a check
  that also takes them."""
  return _is_node_or_registered if GRAPH_NODE_TYPES else is_graph_node_leaf


is_node_leaf = is_graph_node_leaf


def options_first(transform=None, *, check=None, no_methods=False):
  """Lets ``transform`` be configured before it gets its function.

  ``transform``'s first parameter is the function to transform; called
  without it, the returned wrapper gives back a decorator holding the
  options (``@nnx.vmap(in_axes=1)``). The wrapper keeps ``transform``'s
  signature and docstring. ``check(**options)``, when given
  (``@options_first(check=...)``), refuses bad options as soon as they are
  given without a function, as ``transform`` itself does when called with
  one. With ``no_methods``, a bound method of a graph node is refused
  (:func:`check_not_bound_method`).
  """
  if transform is None:
    return functools.partial(options_first, check=check, no_methods=no_methods)
  first = next(iter(inspect.signature(transform).parameters))

  @functools.wraps(transform)
  def wrapper(*args, **kwargs):
    fn = args[0] if args else kwargs.pop(first, MISSING)
    if fn is MISSING:
      if check is not None:
        check(**kwargs)
      return functools.partial(wrapper, *args[1:], **kwargs)
    if no_methods:
      check_not_bound_method(fn, transform.__name__)
    return transform(fn, *args[1:], **kwargs)

  return wrapper


def _getter(positions):
  """A function returning ``leaves[p]`` for every p, as a tuple."""
  if not positions:
    return lambda leaves: ()
  if len(positions) == 1:
    p = positions[0]
    return lambda leaves: (leaves[p],)
  return operator.itemgetter(*positions)


class Sig:
  """Positions of plain leaves, Variables and Pytrees (graph nodes) for
  one tuple of leaf types; in tree mode every graph node but a Variable
  is a plain leaf. Made once per tuple of types (:func:`sig_of`)."""

  __slots__ = (
    'types',
    'others',
    'variables',
    'pytrees',
    'get_others',
    'get_vars',
    'refs',
  )

  def __init__(self, types, tree_mode):
    self.types = types
    others, variables, pytrees = [], [], []
    for i, t in enumerate(types):
      if issubclass(t, Variable):
        variables.append(i)
      elif not tree_mode and (issubclass(t, Pytree) or t in GRAPH_NODE_TYPES):
        pytrees.append(i)
      else:
        others.append(i)
    # plain leaves that are jax.Refs (graph mode takes a Ref reached twice
    # once, see refout.find_aliases)
    self.refs = (
      ()
      if tree_mode
      else tuple(i for i in others if issubclass(types[i], jax.Ref))
    )
    self.others = tuple(others)
    self.variables = tuple(variables)
    self.pytrees = tuple(pytrees)
    self.get_others = _getter(others)
    self.get_vars = _getter(variables)


_SIGS: dict = {}


def sig_of(types, tree_mode=False) -> Sig:
  """The cached :class:`Sig` of ``types``."""
  key = (types, tree_mode)
  sig = _SIGS.get(key)
  if sig is None:
    if len(_SIGS) >= 4096:
      _SIGS.clear()
    sig = _SIGS[key] = Sig(types, tree_mode)
  return sig


class Roots(tp.NamedTuple):
  """The arguments of a transform call with their graph roots found
  (:func:`flatten_roots`): the pytree ``leaves`` (graph nodes as leaves)
  and ``treedef``, their :class:`Sig` and the flat view of each Pytree
  (in the order of ``sig.pytrees``)."""

  leaves: list
  treedef: tp.Any
  sig: Sig
  views: list


def flatten_roots(tree, is_leaf, tree_mode=False) -> Roots:
  """Finds the graph roots of ``tree``: the argument extraction every NNX
  transform starts with (``nnx.jit``'s fast path included)."""
  leaves, treedef = _flatten(tree, is_leaf)
  types = tuple(map(type, leaves))
  sig = _SIGS.get((types, tree_mode))
  if sig is None:
    sig = sig_of(types, tree_mode)
  return Roots(
    leaves,
    treedef,
    sig,
    list(map(_flat_view, map(leaves.__getitem__, sig.pytrees))),
  )


class NodeStates:
  """Pytree standing for a graph node: groups of raw leaf values."""

  __slots__ = ('groups', 'key')

  def __init__(self, groups, key=None):
    self.groups = groups
    self.key = key

  def __repr__(self):
    return f'NodeStates({self.key}, {self.groups!r})'


jax.tree_util.register_pytree_node(
  NodeStates,
  lambda n: (n.groups, n.key),
  lambda key, groups: NodeStates(tuple(groups), key),
)


class _Root:
  __slots__ = (
    'obj',
    'node',
    'slots',
    'paths',
    'nodes',
    'mask',
    'ngroups',
    'view',
  )


def _group(values, mask, ngroups):
  groups = [[] for _ in range(ngroups)]
  for m, v in zip(mask, values):
    groups[m].append(v)
  return tuple(groups)


def _ungroup(groups, mask):
  its = [iter(g) for g in groups]
  return [next(its[m]) for m in mask]


class GraphArgs:
  """Graph nodes extracted from a pytree of arguments (outside)."""

  def __init__(self, tree, *, predicates_for=None):
    leaves, treedef, sig, views = flatten_roots(tree, node_leaf_predicate())
    self.views = views
    self.treedef = treedef
    self.leaves = leaves
    positions = sorted(sig.variables + sig.pytrees)
    self.positions = positions
    roots = []
    objs = [leaves[i] for i in positions]
    # root by root through the flat views (as nnx.jit's fast path) when
    # no Variable stands alone and no object is reachable from two roots
    fast = not sig.variables and (len(views) < 2 or disjoint((), views))
    self.fast = fast
    if fast:
      for o, v in zip(objs, views):
        r = _Root()
        r.obj, r.node, r.slots, r.paths = o, v.graphdef.node, v.leaves, v.paths
        r.nodes, r.view = v.nodes, v
        roots.append(r)
    else:
      f = _Flattener()
      for o in objs:
        start = len(f.leaves)
        node = f.visit(o, ())
        r = _Root()
        r.obj, r.node = o, node
        r.slots, r.paths = f.leaves[start:], f.paths[start:]
        r.nodes, r.view = None, None
        roots.append(r)
      self._all_nodes = [obj for _, obj in f.nodes]
      for r in roots:
        r.nodes = self._all_nodes
    self.roots = roots
    for k, r in enumerate(roots):
      preds = predicates_for(k, positions[k]) if predicates_for else None
      if preds is None:
        r.mask, r.ngroups = None, 1
      else:
        if r.view is not None:
          mask = graphlib.view_mask(r.view, preds)
        else:
          mask = leaf_mask(r.paths, r.slots, preds)
        r.mask, r.ngroups = mask, len(preds) + 1
    self.static = (
      treedef,
      fast,
      tuple(r.node for r in roots),
      tuple(positions),
    )
    # a Ref reached twice crosses once (see refout)
    self.aliases = (
      refout.find_aliases(leaves, sig.refs, roots) if sig.refs else None
    )

  def all_nodes(self) -> list:
    if not self.fast:
      return self._all_nodes
    out = []
    for r in self.roots:
      out.extend(r.nodes)
    return out

  def values(self, k):
    return [s._raw_value for s in self.roots[k].slots]

  def pure(self):
    """The arguments with graph nodes replaced by NodeStates."""
    leaves = list(self.leaves)
    for k, (pos, r) in enumerate(zip(self.positions, self.roots)):
      vals = [s._raw_value for s in r.slots]
      if r.mask is None:
        groups = (vals,)
      else:
        groups = _group(vals, r.mask, r.ngroups)
      leaves[pos] = NodeStates(groups, k)
    if self.aliases:
      for p, src in self.aliases.items():
        leaves[p] = refout.Alias(src)
    return self.treedef.unflatten(leaves)

  def masks(self):
    return [r.mask for r in self.roots]

  def write_back(
    self, update, *, variables_only=False, written=None, metadata=False
  ):
    """Applies ``(changed_nodes, values_per_root)`` from InnerGraph;
    ``variables_only``: leave the arrays of plain attributes as they are
    (only Variables get new values, as without graph updates);
    ``written``: per root, the slots the values go to (from
    :meth:`InnerGraph.written`; None: all); ``metadata``: Variables whose
    metadata changed inside get it (see :func:`write_root`)."""
    changed, values = update
    for k, (r, vals) in enumerate(zip(self.roots, values)):
      new_node = changed[k] if changed is not None else None
      if written is not None:
        slots = r.slots
        targets = [slots[i] for i in written[k]]
        if variables_only:
          pairs = [(s, v) for s, v in zip(targets, vals) if _is_variable(s)]
          targets = [s for s, _ in pairs]
          vals = [v for _, v in pairs]
        store_raw_values(targets, vals)
      elif variables_only and new_node is None:
        pairs = [(s, v) for s, v in zip(r.slots, vals) if _is_variable(s)]
        write_root([s for s, _ in pairs], r.nodes, None, [v for _, v in pairs])
      else:
        write_root(r.slots, r.nodes, new_node, vals, metadata)
    if not variables_only:
      graphlib.order_attributes(self.views, changed is not None)


def write_root(slots, nodes, new_node, values, metadata=False) -> None:
  """Writes into one input root of a transform the values that came back
  for it: the write-back of every NNX transform (``nnx.jit``'s fast path
  included).

  Args:
    slots: where the root's values go, in order (Variables, or array
      slots of its flat view).
    nodes: the objects of the root (by graph index), reused when its
      structure changed.
    new_node: the root's new graph structure, or None if unchanged.
    values: the new values, in the order of ``slots`` (of ``new_node``'s
      leaves when the structure changed).
    metadata: whether Variables whose metadata changed inside get the new
      metadata (changes of metadata are structure changes).
  """
  if new_node is None:
    store_raw_values(slots, values)
  else:
    reuse = _ReuseMap(nodes)
    index = _ReuseIndex(reuse)
    _unflatten(new_node, iter(values), index, reuse, True)
    if metadata:
      _write_metadata(new_node, index)


def _write_metadata(node, index) -> None:
  """Gives the Variables of ``node`` (objects by index) the metadata the
  node records for them, where it differs."""
  kind = node[0]
  if kind == 'v':
    var = index[node[2]]
    if type(node[3]) is not _Meta or node[1] in _HIJAX_CLASSES:
      return
    items = node[3].items
    # in key order, as a graphdef lists them
    varflow.give_metadata(var, {k: items[k] for k in sorted(items)})
  elif kind in ('n', 'g'):
    for _, child in node[3]:
      _write_metadata(child, index)
  elif kind in ('l', 'p', 'd'):
    for child in node[2]:
      _write_metadata(child, index)


def disjoint(variables, views) -> bool:
  """Whether the standalone ``variables`` and the objects of the flat
  ``views`` are all distinct (no object reachable from two roots): the
  condition for the roots to cross a transform view by view."""
  ids = set(map(id, variables))
  if len(ids) != len(variables):
    return False
  for view in views:
    view_ids = graphlib.view_ids(view)
    if not ids.isdisjoint(view_ids):
      return False
    ids |= view_ids
  return True


class _ReuseMap:
  """index -> existing outer object (for structural write-back)."""

  def __init__(self, nodes):
    self.nodes = nodes

  def get(self, i):
    if 0 <= i < len(self.nodes):
      return self.nodes[i]
    return None


class _ReuseIndex(dict):
  def __init__(self, reuse):
    super().__init__()
    self._reuse = reuse

  def __missing__(self, i):
    obj = self._reuse.get(i)
    if obj is None:
      raise KeyError(i)
    return obj


class InnerGraph:
  """Fresh objects rebuilt inside a transform from NodeStates."""

  def __init__(self, static, masks, pure_tree):
    treedef, fast, nodes, positions = static
    leaves = treedef.flatten_up_to(pure_tree)
    self.fast = fast
    self.nodes = nodes
    self.positions = positions
    self.masks = masks
    index: dict = {}
    self.indexes = []
    self.roots = []
    self.in_values = []
    for k, (pos, node) in enumerate(zip(positions, nodes)):
      ns = leaves[pos]
      groups = ns.groups
      mask = masks[k] if masks else None
      vals = groups[0] if mask is None else _ungroup(groups, mask)
      if fast:
        index = {}
        if node[0] == 'n':
          obj = leafplan.rebuild_plan(node).run(list(vals), True, index)
        else:
          obj = _unflatten(node, iter(vals), index, None, True)
      else:
        obj = _unflatten(node, iter(vals), index, None, True)
      self.indexes.append(index)
      self.in_values.append(vals)
      leaves[pos] = obj
      self.roots.append(obj)
    if refout.Alias in map(type, leaves):
      refout.resolve(leaves, self.in_values)
    self.args = treedef.unflatten(leaves)
    # the structure epochs once the inputs are rebuilt (see leafplan)
    self.epochs = (EPOCH.value, META_EPOCH.value)
    # id(inner object) -> global position among the input objects
    self.global_ids = {}
    offset = 0
    for index in self.indexes if fast else self.indexes[:1]:
      for i, obj in index.items():
        self.global_ids[id(obj)] = offset + i
      if fast:
        offset += len(index)

  def updates(self):
    """``(changed_nodes or None, values per root)`` after the function."""
    if self.fast and self.epochs == (EPOCH.value, META_EPOCH.value):
      # no structure changed anywhere: read the values by leaf plan
      plans = [leafplan.leaf_plan(node) for node in self.nodes]
      if None not in plans:
        self.update_slots = None
        return None, [
          leafplan.read_values(plan, index, vals)
          for plan, index, vals in zip(plans, self.indexes, self.in_values)
        ]
    values = []
    changed = []
    any_changed = False
    shared = {}
    # per root, (paths, slots) of its leaves after the function
    self.update_slots = []
    total = (
      sum(len(ix) for ix in self.indexes)
      if self.fast
      else len(self.indexes[0])
      if self.indexes
      else 0
    )
    for k, obj in enumerate(self.roots):
      index = self.indexes[k]
      if self.fast:
        assigned = {id(o): i for i, o in index.items()}
        f = _Flattener(assigned=assigned, start=len(index))
      else:
        if not shared:
          shared['f'] = _Flattener(
            assigned={id(o): i for i, o in index.items()}, start=total
          )
        f = shared['f']
        f_start = len(f.leaves)
      node = f.visit(obj, ())
      if self.fast:
        self.update_slots.append((f.paths, f.leaves))
      else:
        self.update_slots.append((f.paths[f_start:], f.leaves[f_start:]))
      vals = [s._raw_value for s in self.update_slots[-1][1]]
      values.append(vals)
      if node != self.nodes[k]:
        any_changed = True
        changed.append(node)
      else:
        changed.append(None)
    return (tuple(changed) if any_changed else None, values)

  def written(self, changed, values):
    """``(values, written)``: per root, only the values that are not the
    ones it was rebuilt with, and their positions (None: all values, when
    the structure changed). Unchanged values need not leave the transform
    (for :meth:`GraphArgs.write_back`)."""
    if changed is not None:
      return values, None
    kept, written = [], []
    for vals, ins in zip(values, self.in_values):
      idx = tuple(i for i, (v, x) in enumerate(zip(vals, ins)) if v is not x)
      written.append(idx)
      kept.append([vals[i] for i in idx])
    return kept, written

  def flatten_out(self, out, check_trace=True, inputs_as_refs=True):
    """Flattens graph nodes in ``out``. With ``check_trace``, a Variable
    created outside the current trace (captured, not an input) is an
    error: it cannot leave the transform (a transform name given instead
    of True: the pytree-mode error of that transform). With
    ``inputs_as_refs`` an input object among the outputs stays a reference
    to that input; without, it is flattened like any other (the output is
    a new object)."""
    is_node = node_leaf_predicate()
    leaves, treedef = jax.tree_util.tree_flatten(out, is_leaf=is_node)
    positions = [i for i, x in enumerate(leaves) if is_node(x)]
    self.out_slots = []
    if not positions:
      return (treedef, (), ()), leaves
    f = _Flattener()
    if inputs_as_refs:
      for obj_id, gpos in self.global_ids.items():
        f.visited[obj_id] = -(gpos + 1)
    nodes = []
    for pos in positions:
      start = len(f.leaves)
      node = f.visit(leaves[pos], ())
      nodes.append(node)
      self.out_slots.append((f.paths[start:], f.leaves[start:]))
      if check_trace:
        check_created_here(
          f.leaves[start:], None if check_trace is True else check_trace
        )
      leaves[pos] = NodeStates(
        ([s._raw_value for s in f.leaves[start:]],), None
      )
    return (treedef, tuple(nodes), tuple(positions)), leaves

  def out_masks(self, predicates_per_node):
    """Filter groups of the leaves of each output graph node (after
    :meth:`flatten_out`); ``None`` predicates give ``None``."""
    return [
      None if preds is None else leaf_mask(paths, slots, preds)
      for preds, (paths, slots) in zip(predicates_per_node, self.out_slots)
    ]


class _OuterIndex(dict):
  """Objects rebuilt from the outputs by index; a negative index is an
  input object (``input_nodes()`` lists them, on first use)."""

  def __init__(self, input_nodes):
    super().__init__()
    self._input_nodes = input_nodes
    self._nodes = None

  def __missing__(self, i):
    if i < 0:
      if self._nodes is None:
        self._nodes = self._input_nodes()
      return self._nodes[-i - 1]
    raise KeyError(i)


class Result:
  """What a function run inside a JAX transform returns to the outside:
  ``leaves`` (output leaves and Variable updates) as pytree children and
  ``static`` (output structure and graph changes) as auxiliary data, so
  that every trace carries its own structure out (JAX caches traces per
  input shape; a side channel would keep only the latest one)."""

  __slots__ = ('leaves', 'static')

  def __init__(self, leaves, static):
    self.leaves = leaves
    self.static = static


jax.tree_util.register_pytree_node(
  Result, lambda r: (r.leaves, r.static), lambda s, c: Result(c, s)
)


def unflatten_out(out_static, out_leaves, graph_args: GraphArgs | None):
  """The outputs of a transform from what crossed it (``out_static`` from
  :meth:`InnerGraph.flatten_out`); references to inputs resolve to the
  objects of ``graph_args``."""
  treedef, nodes, positions = out_static
  leaves = list(out_leaves)
  for pos in positions:
    leaves[pos] = leaves[pos].groups[0]
  return rebuild_out(
    treedef,
    nodes,
    positions,
    leaves,
    graph_args.all_nodes if graph_args else list,
  )


def rebuild_out(treedef, nodes, positions, leaves, input_nodes):
  """Rebuilds the outputs of a transform (of every NNX transform,
  ``nnx.jit``'s fast path included).

  Args:
    treedef: the pytree structure of the outputs (graph nodes as leaves).
    nodes: the graph structure of each output graph node.
    positions: where the graph nodes sit among the leaves.
    leaves: the output leaves, with the values of each graph node (a
      list) at its position; replaced in place by the rebuilt objects.
    input_nodes: ``input_nodes()`` lists the input objects by global
      index (called only if an output refers to an input).
  """
  index = _OuterIndex(input_nodes)
  for pos, node in zip(positions, nodes):
    vals = leaves[pos]
    if node[0] == 'v':
      # a fresh Variable: made directly
      var = object.__new__(node[1])
      store_raw_value(var, vals[0])
      # in key order, as a graphdef lists them
      items = node[3].items
      object.__setattr__(
        var, '_var_metadata', {k: items[k] for k in sorted(items)}
      )
      index[node[2]] = var
      leaves[pos] = var
    else:
      leaves[pos] = _unflatten(node, iter(vals), index, None, True)
  return treedef.unflatten(leaves)


# -- tree mode ------------------------------------------------------------------


def check_created_here(slots, name=None) -> None:
  """Raises if a Variable among ``slots`` was created in another JAX trace
  than the current one (captured from outside a transform and returned):
  graph mode's 'Cannot extract graph node from different trace level', or
  with ``name`` (pytree mode) 'Cannot return captured Variable'."""
  now = None
  for s in slots:
    created = getattr(s, '_trace_state', None) if _is_variable(s) else None
    if created is None:
      continue
    if now is None:
      now = trace_state()
    if created != now:
      if name is None:
        raise ValueError(
          'Cannot extract graph node from different trace level, got '
          f'{s!r}: a Variable created outside the transform (captured, not '
          'passed as an argument) cannot be returned. Pass it (or the '
          'graph node holding it) as an argument.'
        )
      raise ValueError(
        f'Cannot return captured Variable of type {type(s).__name__} from '
        f'{name}: it was created outside the transform and is not one of '
        'its arguments. Pass it as an argument, or return a copy made with '
        'nnx.clone().'
      )


def check_not_bound_method(f, name):
  """Refuses a method bound to a graph node: the transform would not see
  the instance as an argument (its updates would be lost)."""

  if inspect.ismethod(f) and isinstance(f.__self__, Pytree):
    cls = type(f.__self__).__name__
    raise ValueError(
      f'nnx.{name} does not support bound methods: {f.__qualname__} is '
      f'bound to a {cls}. Decorate the method definition with @nnx.{name}, '
      f'or transform the unbound method, nnx.{name}({cls}.{f.__name__}), '
      'and pass the instance as the first argument.'
    )


FlaxError = errors.FlaxError
