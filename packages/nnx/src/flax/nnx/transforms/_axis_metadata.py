"""Sharding metadata of Variables crossing a mapped transform.

A mapped transform (``vmap``, ``pmap``, ``scan``) given a
``transform_metadata`` holding ``partition_name`` removes the mapped axis
from the ``out_sharding`` names of the Variables it maps over while the
function runs, puts it back afterwards, and inserts it into the Variables
of the graph nodes the function returns. Each other entry ``{key: name}``
of ``transform_metadata`` does the same to the Variables' ``key`` metadata
where that is a non-empty tuple. Without ``partition_name`` the metadata
is left alone.
"""

import jax

from flax.nnx import graphlib, spmd
from flax.nnx.spmd import PARTITION_NAME
from flax.nnx.transforms import common
from flax.nnx.transforms.types import StateAxes
from flax.nnx.variablelib import Variable


def enabled(metadata) -> bool:
  return bool(metadata) and PARTITION_NAME in metadata


def _variables(tree):
  """``(path, Variable)`` of the graph nodes in ``tree``, each once."""
  seen = set()
  for leaf in jax.tree_util.tree_leaves(tree, is_leaf=common.is_node_leaf):
    if not common.is_node_leaf(leaf):
      continue
    items = (
      [((), leaf)] if isinstance(leaf, Variable) else graphlib.iter_graph(leaf)
    )
    for path, v in items:
      if isinstance(v, Variable) and id(v) not in seen:
        seen.add(id(v))
        yield path, v


def variables_of(tree):
  """``(path, Variable)`` of the graph nodes in ``tree``, each once."""
  return _variables(tree)


def mapped_variables(args, axes) -> list:
  """``(Variable, axis)`` for the Variables of ``args`` mapped over an
  axis: ``axes`` gives one entry per argument (an int, None, a
  :class:`StateAxes` or anything else, which maps nothing)."""
  out = []
  for arg, ax in zip(args, axes):
    if isinstance(ax, StateAxes):
      preds = ax.predicates
      for path, v in _variables(arg):
        for pred, axis in zip(preds, ax.axes):
          if pred(path, v):
            if isinstance(axis, int):
              out.append((v, axis))
            break
    elif isinstance(ax, int) and not isinstance(ax, bool):
      out.extend((v, ax) for _, v in _variables(arg))
  return out


def remove(pairs, metadata) -> None:
  name, others = metadata[PARTITION_NAME], spmd._other_axis_names(metadata)
  for v, axis in pairs:
    spmd._remove_axis_name(v, axis, name, others)


def insert(pairs, metadata) -> None:
  name, others = metadata[PARTITION_NAME], spmd._other_axis_names(metadata)
  for v, axis in reversed(pairs):
    spmd._insert_axis_name(v, axis, name, others)


def insert_into_outputs(out, axis, metadata, skip=()) -> None:
  """Inserts the axis ``axis`` into the Variables of the graph nodes of
  ``out`` (once each), except those whose id is in ``skip``."""
  name, others = metadata[PARTITION_NAME], spmd._other_axis_names(metadata)
  for _, v in _variables(out):
    if id(v) not in skip:
      spmd._insert_axis_name(v, axis, name, others)


def insert_into_grown(graph_args, changed, args, in_axes, metadata) -> None:
  """After a mapped transform wrote back inputs whose structure changed
  (``changed``, as :meth:`InnerGraph.updates` gives it): the Variables the
  function added to them, stacked over their mapped axis, get the
  partition name at that axis (``in_axes``: one entry per argument)."""
  if changed is None:
    return
  old = {id(slot) for r in graph_args.roots for slot in r.slots}
  insert(
    [(v, ax) for v, ax in mapped_variables(args, in_axes) if id(v) not in old],
    metadata,
  )
