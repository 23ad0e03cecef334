"""The flat calling convention behind the ``nnx.jit`` fast path.

A call reads the arguments in one pass: graph roots (Pytrees, Variables)
give the raw values of their leaves from their cached flat views, other
leaves pass through. The structural part of the call (pytree structure of
the arguments, graphdefs, static arguments) forms a key; each key owns one
``jax.jit``-compiled function over the flat list of values. After the call
the new leaf values are written back in one pass, and the outputs are
rebuilt from a structure recorded while tracing.

Everything structural (rebuilding objects, detecting structure changes,
flattening outputs) runs only while tracing.
"""

import operator

import jax

from flax.nnx import graphlib
from flax.nnx._common import is_graph_node_leaf
from flax.nnx.graphlib import _EMPTY_META, _Meta, _unflatten, _View
from flax.nnx.pytreelib import Pytree
from flax.nnx.transforms import common
from flax.nnx.variablelib import Variable

_raw = operator.attrgetter('raw_value')
_set = object.__setattr__
_NODE_TYPES = (Pytree, Variable)
_MAX_ENTRIES = 512


_is_node_leaf = is_graph_node_leaf


class Call:
  """The arguments of one call, read into a flat list."""

  __slots__ = ('key', 'flat', 'targets', 'roots', 'leaves', 'treedef')


def read(tree, extra) -> Call | None:
  """Reads ``tree`` (graph roots as leaves) into a :class:`Call`.

  Returns None when the fast path does not apply (graph roots share
  objects); the caller then takes the general path.
  """
  leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=_is_node_leaf)
  key = [extra, treedef]
  flat = []
  targets = []
  roots = []
  for x in leaves:
    if isinstance(x, Pytree):
      view = graphlib.flat_view(x)
      key.append(view.graphdef)
      slots = view.leaves
      flat.extend(map(_raw, slots))
      targets.extend(slots)
      roots.append(view)
    elif isinstance(x, Variable):
      meta = x._var_metadata
      key.append((type(x), _Meta(meta)) if meta else type(x))
      flat.append(x.raw_value)
      targets.append(x)
      roots.append(x)
    else:
      key.append(None)
      flat.append(x)
  if len(roots) > 1 and not _disjoint(roots):
    return None
  call = Call()
  call.key = tuple(key)
  call.flat = flat
  call.targets = targets
  call.roots = roots
  call.leaves = leaves
  call.treedef = treedef
  return call


def _disjoint(roots) -> bool:
  seen = set()
  total = 0
  for r in roots:
    if type(r) is _View:
      ids = graphlib.view_ids(r)
      seen.update(ids)
      total += len(ids)
    else:
      seen.add(id(r))
      total += 1
  return len(seen) == total


def _root_nodes(roots) -> list:
  """Every input object, in the order of the global indices of the trace."""
  out = []
  for r in roots:
    if type(r) is _View:
      out.extend(r.nodes)
    else:
      out.append(r)
  return out


class Entry:
  """One compiled function for one call structure.

  ``fn(*flat)`` returns ``(out_flat, new_values)``; ``changed`` (graph
  nodes of the roots whose structure changed, or None) and the output
  structure are recorded while tracing.
  """

  __slots__ = ('fn', 'changed', 'out', 'new_sizes', 'written')

  def __init__(self):
    self.fn = None
    self.changed = None
    self.out = None
    self.new_sizes = None
    self.written = None


def make_entry(
  call: Call, body, jit_kwargs, donate_args, *, graph_updates=True
) -> Entry:
  """Builds the compiled function of ``call``'s structure.

  Args:
    call: the call whose structure is compiled.
    body: ``body(args_tree) -> out``, the user function applied to the
      rebuilt argument tree.
    jit_kwargs: keyword arguments of ``jax.jit``.
    donate_args: indices of leaves of ``call.leaves`` whose values are
      donated.
    graph_updates: whether the structure of the inputs may change.
  """
  entry = Entry()
  treedef = call.treedef
  positions = []
  nodes = []
  sizes = []
  donate = []
  donated_nodes = set()
  n = 0
  n_nodes = 0
  for pos, x in enumerate(call.leaves):
    if isinstance(x, Pytree):
      view = graphlib.flat_view(x)
      size = len(view.leaves)
      positions.append(pos)
      nodes.append(view.graphdef.node)
      sizes.append(size)
    elif isinstance(x, Variable):
      meta = x._var_metadata
      size = 1
      positions.append(pos)
      nodes.append(('v', type(x), 0, _Meta(meta) if meta else _EMPTY_META))
      sizes.append(1)
    else:
      size = 1
    is_node = bool(positions) and positions[-1] == pos
    if pos in donate_args:
      donate.extend(range(n, n + size))
      if is_node:
        donated_nodes.update(range(n_nodes, n_nodes + size))
    n += size
    if is_node:
      n_nodes += size
  static = (treedef, True, tuple(nodes), tuple(positions))
  node_at = dict(zip(positions, range(len(positions))))
  num_leaves = len(call.leaves)

  def inner(*flat):
    it = iter(flat)
    leaves = []
    node_in = []
    for pos in range(num_leaves):
      k = node_at.get(pos)
      if k is None:
        leaves.append(next(it))
      else:
        vals = [next(it) for _ in range(sizes[k])]
        node_in.extend(vals)
        leaves.append(common.NodeStates((vals,), k))
    ig = common.InnerGraph(static, None, treedef.unflatten(leaves))
    out = body(ig.args)
    changed, values = ig.updates()
    if changed is not None and not graph_updates:
      raise ValueError(
        'The graph structure of an input changed inside nnx.jit (an '
        'attribute was added, removed or replaced) but graph_updates=False. '
        'Use graph_updates=True, or create the attributes before the call.'
      )
    new = []
    for vals in values:
      new.extend(vals)
    entry.changed = changed
    entry.new_sizes = [len(vals) for vals in values]
    if changed is None:
      # Only values that changed (or were donated) come back.
      written = [
        i
        for i, (a, b) in enumerate(zip(node_in, new))
        if a is not b or i in donated_nodes
      ]
      entry.written = None if len(written) == len(new) else written
      if entry.written is not None:
        new = [new[i] for i in written]
    else:
      entry.written = None
    out_static, out_leaves = ig.flatten_out(out)
    out_treedef, out_nodes, out_positions = out_static
    if all(node[0] == 'v' for node in out_nodes):
      # No graph structure in the outputs beyond fresh Variables: JAX's
      # own pytree handling rebuilds them.
      entry.out = None
      return out, new
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
    return out_flat, new

  entry.fn = jax.jit(inner, donate_argnums=tuple(donate), **jit_kwargs)
  return entry


def finish(entry: Entry, call: Call, out, new):
  """Writes ``new`` back into the arguments and rebuilds the outputs."""
  changed = entry.changed
  if changed is not None:
    _write_changed(call, changed, new, entry.new_sizes)
  elif entry.written is None:
    for target, value in zip(call.targets, new):
      _set(target, 'raw_value', value)
  else:
    targets = call.targets
    for i, value in zip(entry.written, new):
      _set(targets[i], 'raw_value', value)
  if entry.out is None:
    return out
  return _rebuild_out(call, entry.out, out)


def _write_changed(call, changed, new, sizes):
  start = 0
  for k, (root, size) in enumerate(zip(call.roots, sizes)):
    vals = new[start : start + size]
    start += size
    node = changed[k]
    if node is None or type(root) is not _View:
      targets = root.leaves if type(root) is _View else (root,)
      for target, value in zip(targets, vals):
        _set(target, 'raw_value', value)
    else:
      reuse = common._ReuseMap(root.nodes, 0, True)
      _unflatten(node, iter(vals), common._ReuseIndex(reuse), reuse, True)


def _rebuild_out(call, out, out_flat):
  out_treedef, out_nodes, out_positions, out_sizes = out
  leaves = []
  it = iter(out_flat)
  node_k = 0
  index = _InputIndex(call.roots)
  for size in out_sizes:
    if size is None:
      leaves.append(next(it))
      continue
    node = out_nodes[node_k]
    node_k += 1
    vals = [next(it) for _ in range(size)]
    if node[0] == 'v':
      var = object.__new__(node[1])
      _set(var, 'raw_value', vals[0])
      _set(var, '_var_metadata', dict(node[3].items))
      index[node[2]] = var
      leaves.append(var)
      continue
    leaves.append(_unflatten(node, iter(vals), index, None, True))
  return out_treedef.unflatten(leaves)


class _InputIndex(dict):
  """Objects rebuilt from the outputs by index; negative indices are input
  objects (listed on first use)."""

  def __init__(self, roots):
    super().__init__()
    self._roots = roots
    self._nodes = None

  def __missing__(self, i):
    if i < 0:
      if self._nodes is None:
        self._nodes = _root_nodes(self._roots)
      return self._nodes[-i - 1]
    raise KeyError(i)


# -- tree mode --------------------------------------------------------------

_is_variable = Variable.__instancecheck__


def read_tree(tree, extra) -> Call | None:
  """Tree-mode counterpart of :func:`read`: Pytrees are JAX pytrees and
  only Variables are read; returns None if a Variable appears twice."""
  leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=_is_variable)
  key = [extra, treedef]
  flat = []
  targets = []
  for x in leaves:
    if isinstance(x, Variable):
      meta = x._var_metadata
      key.append((type(x), _Meta(meta)) if meta else type(x))
      flat.append(x.raw_value)
      targets.append(x)
    else:
      key.append(None)
      flat.append(x)
  if len(set(map(id, targets))) != len(targets):
    return None
  call = Call()
  call.key = tuple(key)
  call.flat = flat
  call.targets = targets
  call.roots = None
  call.leaves = leaves
  call.treedef = treedef
  return call


def make_tree_entry(call: Call, body, jit_kwargs, donate_args) -> Entry:
  """Like :func:`make_entry` for tree mode: Variables are rebuilt fresh
  inside, their final values come back, the outputs are plain pytrees."""
  entry = Entry()
  treedef = call.treedef
  specs = []
  donated_vars = set()
  donate = []
  n_vars = 0
  for pos, x in enumerate(call.leaves):
    if isinstance(x, Variable):
      specs.append((type(x), dict(x._var_metadata)))
      if pos in donate_args:
        donated_vars.add(n_vars)
      n_vars += 1
    else:
      specs.append(None)
    if pos in donate_args:
      donate.append(pos)

  def inner(*flat):
    leaves = []
    variables = []
    for spec, value in zip(specs, flat):
      if spec is None:
        leaves.append(value)
      else:
        var = object.__new__(spec[0])
        _set(var, 'raw_value', value)
        _set(var, '_var_metadata', dict(spec[1]))
        variables.append(var)
        leaves.append(var)
    node_in = [v.raw_value for v in variables]
    out = body(treedef.unflatten(leaves))
    new = [v.raw_value for v in variables]
    written = [
      i
      for i, (a, b) in enumerate(zip(node_in, new))
      if a is not b or i in donated_vars
    ]
    entry.written = None if len(written) == len(new) else written
    if entry.written is not None:
      new = [new[i] for i in written]
    return out, new

  entry.fn = jax.jit(inner, donate_argnums=tuple(donate), **jit_kwargs)
  return entry


def finish_tree(entry: Entry, call: Call, out, new):
  """Writes the new Variable values back; returns the outputs."""
  if entry.written is None:
    for target, value in zip(call.targets, new):
      _set(target, 'raw_value', value)
  else:
    targets = call.targets
    for i, value in zip(entry.written, new):
      _set(targets[i], 'raw_value', value)
  return out
