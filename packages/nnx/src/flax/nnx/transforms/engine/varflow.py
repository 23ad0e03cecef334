"""Variable flow of transforms that do not propagate graph updates.

With ``graph_updates=False`` (and in tree mode) a transform carries the
*values* of the input Variables across, not the graph structure: what the
function does to the structure of its inputs (attributes added, removed or
replaced) stays inside, and the values written back are those of the
Variable objects the inputs were rebuilt with. An input Variable may then
not leave the function again as an output (it would come out as a second
object standing for the same Variable): that is a ``ValueError`` naming
both paths.

Everything here runs while a transform traces its function.
"""

from flax.nnx.variablelib import _HIJAX_CLASSES
import inspect
import weakref

import jax

from flax.nnx._common import (
  META_EPOCH,
  graph_updates_default,
  is_graph_node_leaf,
)
from flax.nnx.flattenlib import _Flattener
from flax.nnx.graphwalk import _path_str
from flax.nnx.pytreelib import Pytree
from flax.nnx.variablelib import Variable


def root_slots(ig) -> list:
  """The leaf slots (Variables and array slots) of every root of the
  :class:`~flax.nnx.transforms.engine.common.InnerGraph` ``ig``, in the layout of
  its input values; call it before running the function."""
  out = []
  if ig.fast:
    for obj, index in zip(ig.roots, ig.indexes):
      assigned = {id(o): i for i, o in index.items()}
      f = _Flattener(assigned=assigned, start=len(index))
      f.visit(obj, ())
      out.append(list(f.leaves))
    return out
  index = ig.indexes[0] if ig.indexes else {}
  f = _Flattener(assigned={id(o): i for i, o in index.items()}, start=0)
  for obj in ig.roots:
    start = len(f.leaves)
    f.visit(obj, ())
    out.append(list(f.leaves[start:]))
  return out


def slot_values(slots, before) -> list:
  """Current values of ``slots`` (per root); an array attribute the
  function removed keeps its value from ``before``."""
  out = []
  for root_slots_, root_before in zip(slots, before):
    vals = []
    for slot, old in zip(root_slots_, root_before):
      try:
        vals.append(slot._raw_value)
      except (KeyError, IndexError, TypeError, AttributeError):
        vals.append(old)
    out.append(vals)
  return out


def values_of(slots) -> list:
  return [[s._raw_value for s in r] for r in slots]


def variable_paths(tree, prefix: str) -> list:
  """``(path, Variable)`` for every Variable reachable from ``tree``,
  through graph nodes; paths are strings such as ``.args[0].count``."""
  out = []
  leaves, _ = jax.tree_util.tree_flatten_with_path(
    tree, is_leaf=is_graph_node_leaf
  )
  for keypath, leaf in leaves:
    base = prefix + jax.tree_util.keystr(keypath)
    if isinstance(leaf, Variable):
      out.append((base, leaf))
    elif isinstance(leaf, Pytree):
      f = _Flattener()
      f.visit(leaf, ())
      for path, slot in zip(f.paths, f.leaves):
        if isinstance(slot, Variable):
          out.append((base + _path_str(path), slot))
  return out


def args_paths(args_tree) -> list:
  """:func:`variable_paths` of an ``(args, kwargs)`` pair."""
  args, kwargs = args_tree
  return variable_paths(tuple(args), '.args') + variable_paths(
    dict(kwargs), '.kwargs'
  )


def check_no_aliases(inputs: list, out, name: str) -> None:
  """Raises if a Variable of ``inputs`` (from :func:`args_paths`) is found
  in the outputs ``out``."""
  if not inputs:
    return
  where = {}
  for path, var in inputs:
    where.setdefault(id(var), path)
  for path, var in variable_paths(out, '.out'):
    first = where.get(id(var))
    if first is not None:
      raise ValueError(duplicate_message(var, [first, path], name))


def check_unique_out(out, name: str) -> None:
  """Raises the duplicate error if one Variable is reached twice among
  the outputs ``out`` as a pytree (tree mode, where Variables leave as
  values and could not come back as one object)."""
  _unique_variables(out, name, lambda kp: '.out' + jax.tree_util.keystr(kp))


def duplicate_message(var, paths, name: str) -> str:
  listed = '\n'.join(f'  - {p}' for p in paths)
  return (
    f'Duplicate {var!r}\nfound at paths:\n\n{listed}\n\n'
    f'{name} with graph_updates=False does not support Variable aliasing: '
    'without graph updates (graph=False or graph_updates=False) Variables '
    'cross the transform as values, so one Variable may not appear twice '
    'among the inputs and outputs (duplicate inputs or outputs, or input '
    'Variables returned). Remove the duplicate, use a copy made with '
    f'nnx.clone(), or use graph mode with updates: {name}(..., graph=True, '
    f'graph_updates=True), or nnx.compat.{name.split(".")[-1]}.'
  )


def check_unique(tree, name: str) -> list:
  """The Variables of the ``(args, kwargs)`` pair ``tree`` as pytree leaves
  (tree mode); one found twice raises the duplicate error."""
  return _unique_variables(tree, name, _arg_path)


def _unique_variables(tree, name: str, path_of) -> list:
  """The Variables among the pytree leaves of ``tree``; one found twice
  raises the duplicate error naming both places (``path_of(keypath)``)."""
  seen = {}
  out = []
  leaves, _ = jax.tree_util.tree_flatten_with_path(
    tree, is_leaf=lambda x: isinstance(x, Variable)
  )
  for keypath, leaf in leaves:
    if isinstance(leaf, Variable):
      path = path_of(keypath)
      first = seen.get(id(leaf))
      if first is not None:
        raise ValueError(duplicate_message(leaf, [first, path], name))
      seen[id(leaf)] = path
      out.append(leaf)
  return out


def _arg_path(keypath) -> str:
  if keypath and getattr(keypath[0], 'idx', None) in (0, 1):
    head = '.args' if keypath[0].idx == 0 else '.kwargs'
    return head + jax.tree_util.keystr(tuple(keypath[1:]))
  return jax.tree_util.keystr(tuple(keypath))


def run_inner(ig, body, graph_updates: bool, name: str):
  """Runs ``body(ig.args)`` inside a transform; returns ``(out, changed,
  values)`` as :meth:`InnerGraph.updates` does. Without ``graph_updates``
  structure changes are dropped (``changed`` is None), the values are those
  of the input Variables and input Variables may not be returned."""
  if graph_updates:
    out = body(ig.args)
    changed, values = ig.updates()
    return out, changed, values
  slots = root_slots(ig)
  before = values_of(slots)
  snapshots = [metadata_snapshot(r) for r in slots]
  inputs = args_paths(ig.args)
  out = body(ig.args)
  check_no_aliases(inputs, out, name)
  # without graph updates the metadata of the input Variables still comes
  # back, as their values do: (root, slot, metadata) of each change
  ig.meta_changes = (
    tuple(
      (k, j, meta)
      for k, (r, snapshot) in enumerate(zip(slots, snapshots))
      for j, meta in changed_metadata(r, snapshot) or ()
    )
    or None
  )
  return out, None, slot_values(slots, before)


# -- Variable metadata set inside a transform -------------------------------


def metadata_snapshot(items) -> list:
  """A copy of the metadata of each Variable among ``items`` (None for
  other items and hijax Variables, whose metadata travels with them), read
  before the function runs."""

  return [
    dict(x._var_metadata)
    if isinstance(x, Variable) and type(x) not in _HIJAX_CLASSES
    else None
    for x in items
  ]


def changed_metadata(items, snapshot) -> tuple | None:
  """``(index, metadata)`` of the Variables among ``items`` whose metadata
  is not the one of ``snapshot`` (:func:`metadata_snapshot`); None if
  none."""
  out = tuple(
    (i, dict(x._var_metadata))
    for i, (x, before) in enumerate(zip(items, snapshot))
    if before is not None and x._var_metadata != before
  )
  return out or None


def give_metadata(var, meta) -> None:
  """Gives ``var`` the metadata ``meta`` (a dict) if it differs: the
  metadata write-back of every transform."""
  if var._var_metadata != meta:
    object.__setattr__(var, '_var_metadata', dict(meta))
    META_EPOCH.value += 1


def give_metadata_at(targets, changes) -> None:
  """:func:`give_metadata` for each ``(index, metadata)`` of ``changes``
  (indices into ``targets``)."""
  for i, meta in changes:
    give_metadata(targets[i], meta)


def arg_index_of_positions(args):
  """Maps flattened-leaf positions (nodes as leaves) to argument index."""
  out = []
  for i, a in enumerate(args):
    n = len(jax.tree_util.tree_leaves(a, is_leaf=is_graph_node_leaf))
    out.extend([i] * n)
  return out


def resolved_updates(graph_updates) -> bool:
  """``graph_updates`` with None resolved to the current default."""
  if graph_updates is None:
    return graph_updates_default()
  return bool(graph_updates)


_SIGNATURES: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()


def _signature_of(fun):
  """``(signature or None, name of a parameter that cannot be given
  positionally or None)`` of ``fun``, cached per function."""
  try:
    return _SIGNATURES[fun]
  except KeyError:
    pass
  except TypeError:  # not weakly referenceable
    return _inspect_signature(fun)
  info = _inspect_signature(fun)
  try:
    _SIGNATURES[fun] = info
  except TypeError:
    pass
  return info


def _inspect_signature(fun):
  try:
    if isinstance(fun, type):
      # a class (a Module constructor): its __init__ without self, not the
      # (*args, **kwargs) of its metaclass
      sig = inspect.signature(fun.__init__)
      sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    else:
      sig = inspect.signature(fun)
  except (TypeError, ValueError):
    return None, None
  for p in sig.parameters.values():
    if p.kind is p.KEYWORD_ONLY:
      return sig, p.name
  return sig, None


def positional_args(fun, args, kwargs, *, defaults=None) -> tuple:
  """``args`` with ``kwargs`` moved to their positions (``defaults``: the
  defaults of the missing parameters filled in too; by default only when
  keywords are given, so that positional calls pass through). A function
  with a keyword-only parameter is a TypeError, whether or not keywords are
  given, and so is a keyword that only ``**kwargs`` would take: graph mode
  transforms map and differentiate positional arguments only."""
  sig, bad = _signature_of(fun)
  if bad is not None or (sig is None and kwargs):
    what = (
      f'has a parameter {bad!r} that cannot be given positionally'
      if bad is not None
      else 'has no signature to place them with'
    )
    raise TypeError(
      f'keyword arguments could not be resolved to positions: {fun!r} '
      f'{what}. Pass the arguments positionally to a function with '
      'positional parameters only, or use graph_updates=False.'
    )
  if defaults is None:
    defaults = bool(kwargs)
  if sig is None or (not kwargs and not defaults):
    return tuple(args)
  bound = sig.bind(*args, **kwargs)
  if defaults:
    bound.apply_defaults()
  if bound.kwargs:
    raise TypeError(
      'keyword arguments could not be resolved to positions: '
      f'{sorted(bound.kwargs)} would reach the **kwargs of {fun!r}. Pass '
      'them positionally, or use graph_updates=False.'
    )
  return tuple(bound.args)
