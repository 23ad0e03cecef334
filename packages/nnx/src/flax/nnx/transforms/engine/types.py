"""Markers used by NNX transforms: DiffState, StateAxes, StateSharding,
Carry."""

from flax.nnx.variablelib import Variable
from flax.nnx.statelib import State
import dataclasses
import typing as tp

from flax.nnx import filterlib


@dataclasses.dataclass(frozen=True)
class DiffState:
  """Selects the differentiable substate of argument ``argnum``.

  >>> from flax import nnx
  >>> nnx.DiffState(0, nnx.PathContains('kernel')).argnum
  0
  """

  argnum: int
  filter: tp.Any

  def map_prefix(self, path, variable) -> bool:
    """Whether the Variable at ``path`` is differentiated."""
    return bool(filterlib.to_predicate(self.filter)(path, variable))


class StateAxes:
  """Maps filters to the axes of the substates they select (vmap, scan).

  >>> from flax import nnx
  >>> axes = nnx.StateAxes({nnx.Param: 0, nnx.BatchStat: None})
  >>> axes.axes
  (0, None)
  """

  def __init__(self, filter_axes, /):

    if isinstance(filter_axes, State):
      filter_axes = _filters_of_state(filter_axes)
    if isinstance(filter_axes, StateAxes):
      filter_axes = dict(zip(filter_axes.filters, filter_axes.axes))
    if hasattr(filter_axes, 'items'):
      items = list(filter_axes.items())
    else:
      items = [tuple(pair) for pair in filter_axes]
    self._filters = tuple(f for f, _ in items)
    self._axes = tuple(a for _, a in items)
    self.predicates = filterlib.filters_to_predicates(self._filters)

  @property
  def filters(self):
    return self._filters

  @property
  def axes(self):
    return self._axes

  def items(self):
    return zip(self._filters, self._axes)

  def __len__(self):
    return len(self._filters)

  def __iter__(self):
    return iter(self._filters)

  def __getitem__(self, key):
    return self._axes[self._filters.index(key)]

  def map_prefix(self, path, variable):
    """The axis of the first filter matching the Variable at ``path``."""
    for predicate, axis in zip(self.predicates, self._axes):
      if predicate(path, variable):
        return axis
    raise ValueError(
      f'No axis found for path={path!r}, variable={variable!r}: no filter '
      f'of {self!r} matches it (add a catch-all ... filter).'
    )

  def __repr__(self):
    return f'StateAxes({dict(self.items())})'

  def __eq__(self, other):
    return isinstance(other, StateAxes) and (
      self._filters == other._filters and self._axes == other._axes
    )

  def __hash__(self):
    return hash((self._filters, self._axes))


def _filters_of_state(state) -> dict:
  """``{PathIn(paths...): value}`` for a State whose leaves are prefix
  values (Variables holding one count as their value): one filter per
  distinct value, in order of first appearance."""

  groups: list = []
  paths, leaves = state._flat_items()
  for path, leaf in zip(paths, leaves):
    value = leaf.get_value() if isinstance(leaf, Variable) else leaf
    for known, members in groups:
      if known is value or known == value:
        members.append(path)
        break
    else:
      groups.append((value, [path]))
  return {filterlib.PathIn(*members): value for value, members in groups}


class StateSharding(StateAxes):
  """Maps filters (or a State of specs) to PartitionSpecs (shard_map)."""

  def __init__(self, filter_sharding, /):

    if not isinstance(filter_sharding, (tp.Mapping, StateAxes, State)):
      filter_sharding = dict(filter_sharding)
    super().__init__(filter_sharding)

  @property
  def shardings(self):
    return self._axes

  def __repr__(self):
    return f'StateSharding({dict(self.items())})'


class Carry:
  """Marks an argument / output of :func:`flax.nnx.scan` as the carry."""


# Users reach the markers through the modules of the transforms that take
# them, which their reprs (and pickles) name, as in Flax 0.12.8.
Carry.__module__ = 'flax.nnx.transforms.iteration'
StateAxes.__module__ = 'flax.nnx.transforms.iteration'
DiffState.__module__ = 'flax.nnx.transforms.autodiff'
StateSharding.__module__ = 'flax.nnx.transforms.compilation'
