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

import typing as tp

from flax.nnx import graphlib
from flax.nnx.pytreelib import Pytree
from flax.nnx.transforms.engine import common
from flax.nnx.transforms.engine.types import StateAxes
from flax.nnx.variablelib import Variable


A = tp.TypeVar('A')
PARTITION_NAME = 'partition_name'


def _is_variable(x) -> bool:
  return isinstance(x, Variable)


def _other_axis_names(transform_metadata) -> tuple:
  """The ``(metadata key, axis name)`` pairs of ``transform_metadata``
  besides its partition name: a transform inserts (removes) each axis name
  in the Variable metadata entry of that key, as it does the partition
  name in ``out_sharding``."""
  return tuple(
    (key, name)
    for key, name in transform_metadata.items()
    if key != PARTITION_NAME
  )


def _insert_axis_name(v, index: int, name, others=()) -> None:
  """A transform added axis ``index`` named ``name`` to the value of the
  Variable ``v``: the name goes into its ``out_sharding`` (if it has a
  non-empty one), each name of ``others`` (``(key, name)`` pairs) into
  the metadata entry ``key`` (if it is a non-empty tuple), and its
  ``on_add_axis`` hooks run."""
  names = v.get_metadata().get('out_sharding')
  if names:
    names = list(names)
    names.insert(index, name)
    v.set_metadata('out_sharding', tuple(names))
  for key, other in others:
    names = v.get_metadata().get(key)
    if isinstance(names, tuple) and names:
      v.set_metadata(key, names[:index] + (other,) + names[index:])
  v.add_axis(index, name)


def _removed(names: tuple, index: int, name) -> tuple:
  if names[index] != name:
    raise ValueError(
      f'Expected to remove {name!r} at index {index} from {names!r}, but '
      f'found {names[index]!r}.'
    )
  return names[:index] + names[index:][1:]


def _remove_axis_name(v, index: int, name, others=()) -> None:
  """A transform removed axis ``index`` named ``name`` of the value of the
  Variable ``v``: the name leaves its ``out_sharding`` (if it has one; it
  must be there), each name of ``others`` (``(key, name)`` pairs) leaves
  the metadata entry ``key`` (if it is a non-empty tuple; it must be
  there), and its ``on_remove_axis`` hooks run."""
  names = v.get_metadata().get('out_sharding')
  if names is not None:
    v.set_metadata('out_sharding', _removed(tuple(names), index, name))
  for key, other in others:
    names = v.get_metadata().get(key)
    if isinstance(names, tuple) and names:
      v.set_metadata(key, _removed(names, index, other))
  v.remove_axis(index, name)


def _transform_names(tree, transform_metadata, fn):
  """Applies ``fn(variable, name, others)`` to every Variable of ``tree``
  (in place): ``name`` is the partition name, ``others`` the other
  ``(metadata key, axis name)`` pairs of ``transform_metadata``."""
  others = _other_axis_names(transform_metadata)

  def visit(x):
    if not _is_variable(x):
      return
    if PARTITION_NAME not in transform_metadata:
      raise ValueError(
        'Trying to transform a Partitioned variable but "partition_name" '
        f'is not specified in transform_metadata: {transform_metadata}'
      )
    fn(x, transform_metadata[PARTITION_NAME], others)

  if isinstance(tree, Pytree):
    for _, value in graphlib.iter_graph(tree):
      visit(value)
  else:
    jax.tree.map(visit, tree, is_leaf=_is_variable)
  return tree


def add_axis(tree: A, index: int, transform_metadata: tp.Mapping) -> A:
  """Inserts ``transform_metadata['partition_name']`` in every
  ``out_sharding`` at ``index`` (after a transform added an axis there),
  and each other entry ``{key: name}`` of ``transform_metadata`` in the
  Variables' ``key`` metadata where that is a non-empty tuple.

  The Variables are updated in place; ``tree`` is returned.

  >>> import jax.numpy as jnp
  >>> from flax import nnx
  >>> st = nnx.State({'w': nnx.Param(jnp.ones((3, 4)), out_sharding=('a', 'b'),
  ...                                eager_sharding=False)})
  >>> nnx.spmd.add_axis(st, 0, {nnx.PARTITION_NAME: 'layers'})['w'].out_sharding
  ('layers', 'a', 'b')
  """

  def insert(v, name, others):
    _insert_axis_name(v, index, name, others)

  return _transform_names(tree, transform_metadata, insert)


def remove_axis(
  tree: A, index: int, transform_metadata: tp.Mapping[tp.Any, tp.Any]
) -> A:
  """Removes the axis name at ``index`` from every ``out_sharding``, and
  from the tuple metadata named by the other entries of
  ``transform_metadata`` (in place; ``tree`` is returned)."""

  def remove(v, name, others):
    _remove_axis_name(v, index, name, others)

  return _transform_names(tree, transform_metadata, remove)


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
  name, others = metadata[PARTITION_NAME], _other_axis_names(metadata)
  for v, axis in pairs:
    _remove_axis_name(v, axis, name, others)


def insert(pairs, metadata) -> None:
  name, others = metadata[PARTITION_NAME], _other_axis_names(metadata)
  for v, axis in reversed(pairs):
    _insert_axis_name(v, axis, name, others)


def insert_into_outputs(out, axis, metadata, skip=()) -> None:
  """Inserts the axis ``axis`` into the Variables of the graph nodes of
  ``out`` (once each), except those whose id is in ``skip``."""
  name, others = metadata[PARTITION_NAME], _other_axis_names(metadata)
  for _, v in _variables(out):
    if id(v) not in skip:
      _insert_axis_name(v, axis, name, others)


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
