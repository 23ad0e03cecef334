"""The ``nnx.jit`` fast path in tree mode (``graph=False``).

In tree mode Pytrees are JAX pytrees: only Variables are carried across the
transform and written back, and shared Variables are an error. When the
tree-mode leaves of a Pytree argument are exactly the leaves of its cached
graph view (no shared references, no arrays hidden in static attributes),
the call reads the view like graph mode does, which skips flattening the
Pytrees through their Python pytree functions on every call. Otherwise the
arguments are flattened by JAX with Variables as leaves.
"""

import operator

import jax

from flax.nnx import graphlib, rebuildlib
from flax.nnx.transforms.engine import _fns, common, varflow
from flax.nnx.transforms.jit.flatcall import (
  NOT_FAST,
  Call,
  Entry,
  Memo,
  _flatten,
  _is_node_leaf,
  _is_variable,
  _set,
  _written,
  make_call,
  read_leaves,
  recall,
  remember,
)
from flax.nnx.variablelib import Variable, store_raw_value, store_raw_values


def _has_refs(node) -> bool:
  kind = node[0]
  if kind == 'r':
    return True
  if kind == 'n':
    return any(_has_refs(c) for _, c in node[3])
  if kind in ('l', 'd', 'p'):
    return any(_has_refs(c) for c in node[2])
  return False


def _tree_ok(view) -> bool:
  """Whether ``view`` lists exactly the tree-mode leaves of its root."""
  ok = view.tree_ok
  if ok is None:
    ok = False
    if not _has_refs(view.graphdef.node):
      try:
        leaves = jax.tree_util.tree_leaves(view.nodes[0], is_leaf=_is_variable)
      except Exception:  # noqa: BLE001 - any failure means: not comparable
        leaves = None
      if leaves is not None:
        mine = [
          s if isinstance(s, Variable) else s._raw_value for s in view.leaves
        ]
        ok = len(leaves) == len(mine) and all(map(operator.is_, leaves, mine))
    view.tree_ok = ok
  return ok


def run_tree(entries: dict, extra, tree, compile_entry, memo=None):
  """One tree-mode call on the fast path; :data:`NOT_FAST` if a Variable
  appears twice (the general path then raises the error). ``memo`` is as
  in :func:`flatcall.run`."""
  leaves, treedef, sig, views = common.flatten_roots(tree, _is_node_leaf)
  if views:
    for v in views:
      if v.tree_ok is not True and not _tree_ok(v):
        if memo is not None:
          memo[0] = None
        return _run_flat(entries, extra, tree, compile_entry)
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
  return _finish(entry, targets, flat)


def run_tree_memo(m: Memo, args):
  """A tree-mode call through memo ``m`` (see :class:`flatcall.Memo`);
  :data:`NOT_FAST` if the call does not match it."""
  hit = recall(m, args)
  if hit is None:
    return NOT_FAST
  flat, targets, _ = hit
  return _finish(m.entry, targets, flat)


def _run_flat(entries: dict, extra, tree, compile_entry):
  """Tree-mode call with JAX flattening the Pytrees."""
  leaves, treedef, sig, _ = common.flatten_roots(tree, _is_variable, True)
  read = read_leaves(leaves, sig, ())
  if read is None:
    return NOT_FAST
  flat, variables, key_part = read
  key = (extra, treedef, sig, *key_part)
  entry = entries.get(key)
  if entry is None:
    entry = compile_entry(
      make_call(key, flat, variables, leaves, treedef, sig, (), _is_variable)
    )
  return _finish(entry, variables, flat)


def _finish(entry, targets, flat):
  out_flat, new = entry.fn(*flat)
  if entry.poly:
    entry.load(flat)
  written = entry.written
  if written is None:
    store_raw_values(targets, new)
  else:
    store_raw_values(map(targets.__getitem__, written), new)
  if entry.metas is not None:
    varflow.give_metadata_at(targets, entry.metas)
  return entry.out.unflatten(out_flat)


def make_tree_entry(call: Call, body, mode, jit_kwargs, donate_args) -> Entry:
  """Compiles a tree-mode call: Variables (standalone or in Pytrees) are
  rebuilt fresh inside, their final values come back (arrays held by
  Pytrees do not), the outputs are plain pytrees (returned flat, with
  their structure kept in ``entry.out``) checked by ``mode`` (the
  :class:`~._fns.PytreeMode` of the jitted function)."""
  entry = Entry()
  treedef = call.treedef
  sig = call.sig
  num_leaves = len(call.leaves)
  n_others = len(sig.others)
  specs = [
    (type(call.leaves[p]), dict(call.leaves[p]._var_metadata))
    for p in sig.variables
  ]
  graphdefs = [v.graphdef for v in call.views]
  sizes = [len(v.leaves) for v in call.views]
  donate = [j for j, p in enumerate(sig.others) if p in donate_args]
  donated = set()
  n = n_others
  for p in sig.variables:
    if p in donate_args:
      donate.append(n)
      donated.add(n - n_others)
    n += 1
  for p, size in zip(sig.pytrees, sizes):
    if p in donate_args:
      donate.extend(range(n, n + size))
      donated.update(range(n - n_others, n - n_others + size))
    n += size

  def inner(*flat):
    before = entry._facts()
    leaves = [None] * num_leaves
    for j, p in enumerate(sig.others):
      leaves[p] = flat[j]
    inner_targets = []
    it = iter(flat[n_others:])
    for p, (cls, meta) in zip(sig.variables, specs):
      var = object.__new__(cls)
      store_raw_value(var, next(it))
      _set(var, '_var_metadata', dict(meta))
      inner_targets.append(var)
      leaves[p] = var
    for p, graphdef, size in zip(sig.pytrees, graphdefs, sizes):
      vals = [next(it) for _ in range(size)]
      obj = rebuildlib.unflatten(graphdef, vals, raw=True)
      inner_targets.extend(graphlib.flat_view(obj).leaves)
      leaves[p] = obj
    node_in = flat[n_others:]
    args_tree = treedef.unflatten(leaves)
    entered = _fns.Entered(
      [t for t in inner_targets if isinstance(t, Variable)],
      varflow.args_paths(args_tree),
    )
    meta_before = varflow.metadata_snapshot(inner_targets)
    out = mode.outputs(entered, body(args_tree))
    entry.metas = varflow.changed_metadata(inner_targets, meta_before)
    new = [
      t._raw_value if isinstance(t, Variable) else node_in[i]
      for i, t in enumerate(inner_targets)
    ]
    entry.written = _written(node_in, new, donated)
    if entry.written is not None:
      new = [new[i] for i in entry.written]
    # A flat list of arrays leaves the jit; the structure rebuilds it.
    out_flat, entry.out = _flatten(out)
    entry.record(flat, before)
    return out_flat, new

  _fns.name_after(inner, mode.f)
  entry.fn = jax.jit(inner, donate_argnums=tuple(donate), **jit_kwargs)
  return entry
