"""Logical axis rules: mapping logical axis names to mesh axes.

Arrays name their dimensions with logical names (``'batch'``, ``'embed'``,
...). Rules, an ordered sequence of ``(logical_name, mesh_axes)`` pairs, say
which mesh axes each logical name is sharded over.

>>> from flax import spmd
>>> rules = (('batch', 'data'), ('hidden', 'model'))
>>> spmd.logical_to_mesh_axes(('batch', 'length', 'hidden'), rules)
P('data', None, 'model')
"""

import collections
from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec

# The rules in effect live in flax.core.spmd (one per-thread state shared by
# every API that reads them).
from flax.core.spmd import get_logical_axis_rules as get_logical_axis_rules
from flax.core.spmd import logical_axis_rules as logical_axis_rules
from flax.core.spmd import set_logical_axis_rules as set_logical_axis_rules

__all__ = [
  'get_logical_axis_rules',
  'logical_axis_rules',
  'logical_to_mesh',
  'logical_to_mesh_axes',
  'logical_to_mesh_sharding',
  'set_logical_axis_rules',
]

LogicalRules = Sequence[tuple[str, Any]]


class _Unassigned:
  """Marks a dimension that no rule matched."""

  def __repr__(self):
    return 'UnassignedAxis'

  def __bool__(self):
    return False


UNASSIGNED = _Unassigned()


_UNCONSTRAINED = PartitionSpec.UNCONSTRAINED


def _mesh_names(assignment) -> set:
  if (
    assignment is None
    or assignment is UNASSIGNED
    or assignment is _UNCONSTRAINED
  ):
    return set()
  if isinstance(assignment, str):
    return {assignment}
  names = set()
  for item in assignment:
    names |= _mesh_names(item)
  return names


def logical_to_mesh_assignment(array_dim_names, rules=None):
  """Like ``logical_to_mesh_axes``, with ``UNASSIGNED`` for unmatched names.

  Returns None if ``array_dim_names`` is None.
  """
  if array_dim_names is None:
    return None
  if rules is None:
    rules = get_logical_axis_rules()
  array_dim_names = tuple(array_dim_names)
  counts = collections.Counter(array_dim_names)
  dups = tuple(
    k
    for k, v in counts.items()
    if v > 1 and k is not None and k is not _UNCONSTRAINED
  )
  if dups:
    raise ValueError(
      f'Unsupported: Dimensions {dups} occur more than once in array names.'
    )
  if not isinstance(rules, (tuple, list)):
    raise ValueError('Unknown axis rule specification type.')
  # A dimension named ``PartitionSpec.UNCONSTRAINED`` stays unconstrained;
  # a rule may map a name to it too (it uses no mesh axis).
  result = [
    _UNCONSTRAINED if name is _UNCONSTRAINED else UNASSIGNED
    for name in array_dim_names
  ]
  used: set = set()
  for rule in rules:
    logical_name, mesh_axes = rule
    if logical_name not in array_dim_names:
      continue
    pos = array_dim_names.index(logical_name)
    wanted = _mesh_names(mesh_axes)
    if result[pos] is UNASSIGNED and not (wanted & used):
      result[pos] = mesh_axes
      used |= wanted
  return result


def logical_to_mesh_axes(
  array_dim_names: Sequence[str | None] | None,
  rules: LogicalRules | None = None,
) -> PartitionSpec | None:
  """Maps the logical names of an array's dimensions to mesh axes.

  Rules are read in order: a rule ``(name, mesh_axes)`` assigns
  ``mesh_axes`` to the dimension called ``name`` if that dimension has no
  mesh axes yet and none of ``mesh_axes`` is used by another dimension.
  Unmatched dimensions are not sharded (``None``).

  >>> from flax import spmd
  >>> rules = (('batch', 'X'), ('features', 'X'), ('heads', 'Y'),
  ...          ('batch', 'Z'))
  >>> spmd.logical_to_mesh_axes(('batch', 'length', 'heads', 'features'),
  ...                           rules)
  P('X', None, 'Y', None)

  Args:
    array_dim_names: one logical name (or None) per dimension, or None.
    rules: the rules; by default :func:`get_logical_axis_rules`.

  Returns:
    The ``PartitionSpec``, or None if ``array_dim_names`` is None.

  Raises:
    ValueError: if a name occurs twice, or the rules are not a sequence.
  """
  result = logical_to_mesh_assignment(array_dim_names, rules)
  if result is None:
    return None
  return PartitionSpec(*(None if x is UNASSIGNED else x for x in result))


def _is_spec(x) -> bool:
  return isinstance(x, PartitionSpec)


def logical_to_mesh(tree: Any, rules: LogicalRules | None = None) -> Any:
  """Maps every logical ``PartitionSpec`` in ``tree`` to mesh axes."""
  return jax.tree_util.tree_map(
    lambda spec: logical_to_mesh_axes(spec, rules), tree, is_leaf=_is_spec
  )


def logical_to_mesh_sharding(
  tree: Any, mesh, rules: LogicalRules | None = None
) -> Any:
  """Maps every logical ``PartitionSpec`` in ``tree`` to a NamedSharding."""
  return jax.tree_util.tree_map(
    lambda spec: NamedSharding(mesh, spec),
    logical_to_mesh(tree, rules),
    is_leaf=_is_spec,
  )
