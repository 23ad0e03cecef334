"""The flat calling convention behind the ``nnx.jit`` fast path.

A call finds its graph roots with the engine's extraction
(:func:`common.flatten_roots`: Pytrees and Variables as leaves, sorted by
their types with a classification cached per tuple of types). The
compiled function receives one flat list (the plain leaves, then the
values of the standalone Variables, then the leaf values of each Pytree
read from its cached flat view) and rebuilds the objects with
:class:`common.InnerGraph`. The structural part of the call (pytree
structure, leaf types, graphdefs, Variable metadata, static arguments)
forms a key; each key owns one ``jax.jit``-compiled function. After the
call the values that changed are written back in one pass
(:func:`common.write_root` where a structure changed), and outputs are
rebuilt by JAX or from a structure recorded while tracing
(:func:`common.rebuild_out`).

Everything structural (rebuilding objects, detecting structure changes,
flattening outputs) runs only while tracing.
"""

import operator
import weakref

import jax

from flax.nnx import graphlib
from flax.nnx._common import is_graph_node_leaf
from flax.nnx.flattenlib import _EMPTY_META, _Meta
from flax.nnx.graphlib import order_attributes
from flax.nnx.transforms.engine import _fns, common, varflow
from flax.nnx.transforms.engine import refout
from flax.nnx.variablelib import Variable, store_raw_value, store_raw_values

_raw = operator.attrgetter('_raw_value')
_meta = operator.attrgetter('_var_metadata')
_set = object.__setattr__
_flatten = jax.tree_util.tree_flatten
_is_node_leaf = is_graph_node_leaf
_is_variable = Variable.__instancecheck__
_MAX_ENTRIES = 512
TreeDef = type(jax.tree_util.tree_structure(None))


def _meta_key(variables):
  """Hashable metadata of ``variables`` (None if all are empty)."""
  if not any(map(_meta, variables)):
    return None
  return tuple(_Meta(m) if m else None for m in map(_meta, variables))


class Call:
  """The arguments of one call, read into a flat list.

  ``targets`` are the objects whose ``raw_value`` the node part of
  ``flat`` (everything after the plain leaves) came from.
  """

  __slots__ = (
    'key',
    'flat',
    'targets',
    'leaves',
    'treedef',
    'sig',
    'views',
    'is_leaf',
  )


def make_call(key, flat, targets, leaves, treedef, sig, views, is_leaf):
  """The :class:`Call` of a structure seen for the first time."""
  call = Call()
  call.key = key
  call.flat = flat
  call.targets = targets
  call.leaves = leaves
  call.treedef = treedef
  call.sig = sig
  call.views = views
  call.is_leaf = is_leaf
  return call


NOT_FAST = object()


class Memo:
  """The structure of the last call of a jitted function, by identity.

  A call whose arguments are graph roots and plain leaves (no containers,
  no keywords, no jax.Refs) records which roots it got and their views. The next call
  with the same roots, the same views (views are rebuilt whenever a
  structure changes) and plain leaves of the same types has the same key,
  entry and write-back targets: it skips flattening, key building and the
  sharing checks. Roots and views are held weakly.
  """

  __slots__ = ('types', 'sig', 'refs', 'view_refs', 'entry')


def remember(box: list, args, leaves, sig, views, entry) -> None:
  """Stores the memo of a call in ``box[0]`` if the call qualifies."""
  if (
    sig.variables
    or sig.refs
    or len(leaves) != len(args)
    or not all(map(operator.is_, leaves, args))
  ):
    box[0] = None
    return
  m = Memo()
  m.types = sig.types
  m.sig = sig
  m.refs = tuple(weakref.ref(leaves[p]) for p in sig.pytrees)
  m.view_refs = tuple(map(weakref.ref, views))
  m.entry = entry
  box[0] = m


def recall(m: Memo, args):
  """``(flat, targets, views)`` of a call matching memo ``m``, else None."""
  if tuple(map(type, args)) != m.types:
    return None
  sig = m.sig
  flat = list(sig.get_others(args))
  targets = []
  views = []
  for p, ref, view_ref in zip(sig.pytrees, m.refs, m.view_refs):
    root = args[p]
    if ref() is not root:
      return None
    view = graphlib.flat_view(root)
    if view_ref() is not view:
      return None
    slots = view.leaves
    flat.extend(map(_raw, slots))
    targets += slots
    views.append(view)
  return flat, targets, views


def run_memo(m: Memo, args):
  """A graph-mode call through memo ``m``; :data:`NOT_FAST` if the call
  does not match it."""
  hit = recall(m, args)
  if hit is None:
    return NOT_FAST
  flat, targets, views = hit
  return _finish(m.entry, flat, targets, args, m.sig, views)


def run(entries: dict, extra, tree, compile_entry, memo=None):
  """One call on the fast path.

  Args:
    entries: the compiled entries of the wrapped function, by call key.
    extra: hashable static part of the key (static arguments, flags).
    tree: the ``(args, kwargs)`` pytree of the call.
    compile_entry: ``compile_entry(call) -> Entry`` for a new structure.
    memo: a one-item list receiving the :class:`Memo` of this call (for
      calls without keywords), or None.

  Returns:
    The outputs, or :data:`NOT_FAST` if the general path must run.
  """
  leaves, treedef, sig, views = common.flatten_roots(tree, _is_node_leaf)
  if sig.refs and refout.aliased(leaves, sig.refs, sig.get_vars(leaves), views):
    # a Ref reached twice: the general path passes it once
    return NOT_FAST
  read = read_leaves(leaves, sig, views)
  if read is None:
    return NOT_FAST
  flat, targets, key_part = read
  key = (extra, treedef, sig, *key_part)
  entry = entries.get(key)
  if entry is None:
    entry = compile_entry(
      make_call(key, flat, targets, leaves, treedef, sig, views, _is_node_leaf)
    )
  if memo is not None:
    remember(memo, tree[0], leaves, sig, views, entry)
  return _finish(entry, flat, targets, leaves, sig, views)


def read_leaves(leaves, sig, views):
  """``(flat, targets, key part)`` of the flattened arguments of a call
  (``views``: the flat views of its Pytrees), or None if an object is
  reachable twice among the roots (the general path handles that).

  ``flat`` holds the plain leaves, then the raw values of the standalone
  Variables, then those of each view's slots (the ``targets``, in that
  order); the key part holds the graphdefs and the Variable metadata.
  """
  flat = list(sig.get_others(leaves))
  variables = sig.get_vars(leaves)
  flat.extend(map(_raw, variables))
  if views:
    targets = list(variables)
    for v in views:
      slots = v.leaves
      flat.extend(map(_raw, slots))
      targets.extend(slots)
    if len(views) == 1:
      graphdefs = views[0].graphdef
      if variables:
        ids = set(map(id, variables))
        if len(ids) != len(variables) or not ids.isdisjoint(
          graphlib.view_ids(views[0])
        ):
          return None
    else:
      graphdefs = tuple(v.graphdef for v in views)
      if not common.disjoint(variables, views):
        return None
  else:
    targets = variables
    graphdefs = None
    if len(variables) > 1 and len(set(map(id, variables))) != len(variables):
      return None
  meta = _meta_key(variables) if variables else None
  return flat, targets, (graphdefs, meta)


def _finish(entry, flat, targets, leaves, sig, views):
  """Calls ``entry``, writes the new values back, returns the outputs."""
  out, new = entry.fn(*flat)
  if entry.poly:
    entry.load(flat)
  if entry.refs:
    new = refout.give(new, flat)
  written = entry.written
  if entry.changed is not None:
    call = Call()
    call.leaves = leaves
    call.sig = sig
    call.views = views
    _write_changed(entry, call, new)
  elif written is None:
    store_raw_values(targets, new)
  else:
    store_raw_values(map(targets.__getitem__, written), new)
  if entry.orders:
    rebuilt = entry.changed is not None
    for v in views:
      if rebuilt or not v.ordered:
        order_attributes(views, rebuilt)
        break
  if entry.node_refs:
    out = refout.give(out, flat)
  out_tree = entry.out
  if type(out_tree) is TreeDef:
    out = out_tree.unflatten(out)
  else:
    call = Call()
    call.leaves = leaves
    call.sig = sig
    call.views = views
    out = _rebuild_out(call, entry.out, out)
  if entry.refs:
    out = refout.give(out, flat)
  if entry.metas is not None:
    varflow.give_metadata_at(targets, entry.metas)
  return out


def _roots(call) -> list:
  """The graph roots of ``call`` (views or Variables) in leaf order, the
  order of the trace's global object indices."""
  sig = call.sig
  by_pos = dict(zip(sig.pytrees, call.views))
  return [
    by_pos[p] if p in by_pos else call.leaves[p]
    for p in sorted(sig.variables + sig.pytrees)
  ]


def _root_nodes(roots) -> list:
  """Every input object, in the order of the global indices of the trace."""
  out = []
  for r in roots:
    if isinstance(r, Variable):
      out.append(r)
    else:
      out.extend(r.nodes)
  return out


class Entry:
  """One compiled function for one call structure.

  ``fn(*flat)`` returns ``(out, new_values)``. Recorded while tracing:
  ``changed`` (new graph nodes of roots whose structure changed, in target
  order, or None), ``new_sizes`` (values per root, target order),
  ``written`` (indices of the targets that get new values, or None for all)
  and ``out`` (the pytree structure of the flat outputs when they hold no
  graph nodes but fresh Variables, else the graph structure to rebuild them
  from).

  JAX traces again for new input shapes or dtypes; if such a trace records
  different facts (code that branches on shapes), the entry becomes
  *polymorphic* and each call looks its facts up by the abstract values of
  its inputs.
  """

  __slots__ = (
    'fn',
    'changed',
    'out',
    'new_sizes',
    'written',
    'traced',
    'poly',
    'by_avals',
    'orders',
    'refs',
    'node_refs',
    'metadata',
    'metas',
  )

  def __init__(self):
    self.fn = None
    self.changed = None
    self.out = None
    self.new_sizes = None
    self.written = None
    self.traced = False
    self.poly = False
    self.by_avals = {}
    self.orders = False
    self.refs = False
    # whether the flat outputs hold refout markers of the Refs of output
    # graph nodes (given back before the nodes are rebuilt)
    self.node_refs = False
    # whether Variables whose metadata changed inside get it (nnx.jit
    # keeps the outer metadata; the eager cache of nnx.scan passes it on)
    self.metadata = False
    # without graph updates: (target index, metadata) of the input
    # Variables whose metadata the function changed, or None
    self.metas = None

  def _facts(self):
    return _get_facts(self)

  def record(self, flat, facts_before):
    """Called at the end of a trace, after the facts were set."""
    facts = self._facts()
    if self.traced and facts_before != facts:
      self.poly = True
    self.traced = True
    self.by_avals[_avals(flat)] = facts

  def load(self, flat):
    """Sets the facts recorded for the abstract values of ``flat``."""
    for name, value in zip(_FACTS, self.by_avals[_avals(flat)]):
      setattr(self, name, value)


# What a trace records about one call structure (see Entry).
_FACTS = (
  'changed',
  'out',
  'new_sizes',
  'written',
  'refs',
  'node_refs',
  'metas',
)
_get_facts = operator.attrgetter(*_FACTS)


def _avals(flat) -> tuple:
  out = []
  for x in flat:
    try:
      a = jax.typeof(x)
      out.append((a.shape, a.dtype, a.weak_type))
    except TypeError:
      out.append(type(x))
  return tuple(out)


def _written(node_in, new, donated) -> list | None:
  """Indices of the values that get written back: the changed ones and
  those in ``donated`` (donated, or to be written anyway)."""
  written = [
    i
    for i, (a, b) in enumerate(zip(node_in, new))
    if a is not b or i in donated
  ]
  return None if len(written) == len(new) else written


def make_entry(
  call: Call,
  body,
  jit_kwargs,
  donate_args,
  *,
  graph_updates=True,
  name='nnx.jit',
  source=None,
) -> Entry:
  """Builds the compiled function of ``call``'s structure (graph mode).

  Args:
    call: the call whose structure is compiled.
    body: ``body(args_tree) -> out``, the user function applied to the
      rebuilt argument tree.
    jit_kwargs: keyword arguments of ``jax.jit``.
    donate_args: positions in ``call.leaves`` of donated leaves.
    graph_updates: whether the structure of the inputs may change.
    name: the transform errors name.
    source: the user function, which JAX names in its messages.
  """
  entry = Entry()
  # with graph updates the inputs come back with their attributes sorted
  entry.orders = graph_updates
  treedef = call.treedef
  sig = call.sig
  num_leaves = len(call.leaves)
  n_others = len(sig.others)
  # Target order: standalone Variables, then Pytrees; each root's values
  # sit at [start, start + size) of the flat list.
  target_pos = sig.variables + sig.pytrees
  sizes = [1] * len(sig.variables) + [len(v.leaves) for v in call.views]
  starts = []
  start = n_others
  for size in sizes:
    starts.append(start)
    start += size
  root_nodes = {}
  for p in sig.variables:
    meta = call.leaves[p]._var_metadata
    root_nodes[p] = (
      'v',
      type(call.leaves[p]),
      0,
      _Meta(meta) if meta else _EMPTY_META,
    )
  for p, view in zip(sig.pytrees, call.views):
    root_nodes[p] = view.graphdef.node
  leaf_order = sorted(target_pos)
  k_of = {p: k for k, p in enumerate(leaf_order)}
  # root -> index of its first value among the targets
  root_start = {k_of[p]: st - n_others for p, st in zip(target_pos, starts)}
  span = dict(zip(target_pos, zip(starts, sizes)))
  static = (
    treedef,
    True,
    tuple(root_nodes[p] for p in leaf_order),
    tuple(leaf_order),
  )
  donate = [j for j, p in enumerate(sig.others) if p in donate_args]
  donated = set()
  for p in target_pos:
    if p in donate_args:
      s, n = span[p]
      donate.extend(range(s, s + n))
      donated.update(range(s - n_others, s - n_others + n))
  # values that are no arrays yet (numbers held by data attributes) are
  # written back too: they come out of the call as arrays (a raw jax.Ref
  # is written in place, never returned)
  donated.update(
    i
    for i, v in enumerate(call.flat[n_others:])
    if not isinstance(v, (jax.Array, jax.Ref))
  )
  # without graph updates only Variables get their new values (arrays and
  # numbers held by plain attributes keep theirs), as Flax 0.12.8
  new_ok = bool(sig.variables or sig.pytrees or sig.refs)
  only = None
  if not graph_updates:
    only = [i for i, t in enumerate(call.targets) if isinstance(t, Variable)]

  def inner(*flat):
    before = entry._facts()
    leaves = [None] * num_leaves
    for j, p in enumerate(sig.others):
      leaves[p] = flat[j]
    for p in leaf_order:
      s, n = span[p]
      leaves[p] = common.NodeStates((list(flat[s : s + n]),), k_of[p])
    ig = common.InnerGraph(static, None, treedef.unflatten(leaves))
    out, changed, values = varflow.run_inner(ig, body, graph_updates, name)
    if not graph_updates:
      # metadata set inside comes back to the input Variables
      entry.metas = _target_metas(ig.meta_changes, root_start)
    # Refs among the outputs (inputs, or made inside when an argument is a
    # graph node or a Ref); without graph updates JAX refuses them
    entry.refs = entry.node_refs = False
    if graph_updates:
      out, entry.refs = refout.take(out, flat, new_ok)
    new = []
    for p in target_pos:
      new.extend(values[k_of[p]])
    if changed is None:
      entry.changed = None
      written = _written(flat[n_others:], new, donated)
      if only is not None:
        kept = range(len(new)) if written is None else set(written)
        written = [i for i in only if i in kept]
        if len(written) == len(new):
          written = None
      entry.written = written
      if entry.written is not None:
        new = [new[i] for i in entry.written]
    else:
      entry.changed = tuple(changed[k_of[p]] for p in target_pos)
      entry.new_sizes = [len(values[k_of[p]]) for p in target_pos]
      entry.written = None
      # Refs set as attributes come back as themselves or as new Refs
      new, refs = refout.take(new, flat)
      entry.refs = entry.refs or refs
    out_static, out_leaves = ig.flatten_out(
      out, True if graph_updates else name
    )
    out_treedef, out_nodes, out_positions = out_static
    if all(node[0] == 'v' for node in out_nodes):
      # No graph structure in the outputs beyond fresh Variables: the
      # outputs leave as a flat list of arrays and their pytree structure
      # rebuilds them outside (cheaper than a structured jit output).
      out_flat, entry.out = _flatten(out)
      out_flat = _take_node_refs(entry, out_flat, flat, graph_updates, new_ok)
      entry.record(flat, before)
      return out_flat, new
    out_flat = []
    out_sizes = []
    for leaf in out_leaves:
      if type(leaf) is common.NodeStates:
        vals = leaf.groups[0]
        out_flat.extend(vals)
        out_sizes.append(len(vals))
      else:
        out_flat.append(leaf)
        out_sizes.append(None)
    entry.out = (out_treedef, out_nodes, out_positions, out_sizes)
    out_flat = _take_node_refs(entry, out_flat, flat, graph_updates, new_ok)
    entry.record(flat, before)
    return out_flat, new

  if source is not None:
    _fns.name_after(inner, source)
  entry.fn = jax.jit(inner, donate_argnums=tuple(donate), **jit_kwargs)
  return entry


def _take_node_refs(entry, out_flat, flat, graph_updates, new_ok) -> list:
  """``out_flat`` with the Refs held by the output graph nodes (e.g. a
  ``ref=True`` Variable of a Module made inside) replaced by refout
  markers (graph updates only), as for the plain Ref outputs."""
  if not graph_updates:
    return out_flat
  out_flat, found = refout.take(out_flat, flat, new_ok)
  entry.node_refs = found
  entry.refs = entry.refs or found
  return out_flat


def _target_metas(changes, root_start) -> tuple | None:
  """``(target index, metadata)`` of ``(root, slot, metadata)`` changes."""
  if changes is None:
    return None
  return tuple((root_start[k] + j, meta) for k, j, meta in changes)


def _write_changed(entry, call, new):
  roots = list(call.sig.get_vars(call.leaves)) + list(call.views)
  start = 0
  for root, node, size in zip(roots, entry.changed, entry.new_sizes):
    vals = new[start : start + size]
    start += size
    if isinstance(root, Variable):
      store_raw_value(root, vals[0])
      if entry.metadata and node is not None:
        common._write_metadata(node, {node[2]: root})
    else:
      common.write_root(root.leaves, root.nodes, node, vals, entry.metadata)


def _rebuild_out(call, out, out_flat):
  out_treedef, out_nodes, out_positions, out_sizes = out
  leaves = []
  it = iter(out_flat)
  for size in out_sizes:
    if size is None:
      leaves.append(next(it))
    else:
      leaves.append([next(it) for _ in range(size)])
  return common.rebuild_out(
    out_treedef,
    out_nodes,
    out_positions,
    leaves,
    lambda: _root_nodes(_roots(call)),
  )
