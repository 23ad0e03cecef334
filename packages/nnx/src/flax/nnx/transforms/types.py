"""Markers used by NNX transforms: DiffState, StateAxes, StateSharding,
Carry."""

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


class StateAxes:
  """Maps filters to the axes of the substates they select (vmap, scan).

  >>> from flax import nnx
  >>> axes = nnx.StateAxes({nnx.Param: 0, nnx.BatchStat: None})
  >>> axes.axes
  (0, None)
  """

  def __init__(self, filter_axes, /):
    if isinstance(filter_axes, StateAxes):
      filter_axes = dict(zip(filter_axes.filters, filter_axes.axes))
    items = list(filter_axes.items())
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

  def __repr__(self):
    return f'StateAxes({dict(self.items())})'

  def __eq__(self, other):
    return isinstance(other, StateAxes) and (
      self._filters == other._filters and self._axes == other._axes
    )

  def __hash__(self):
    return hash((self._filters, self._axes))


class StateSharding(StateAxes):
  """Maps filters (or a State of specs) to PartitionSpecs (shard_map)."""

  def __init__(self, filter_specs, /):
    from flax.nnx.statelib import State

    if isinstance(filter_specs, State):
      paths, specs = filter_specs._flat_items()
      filter_specs = {filterlib.PathIn(p): s for p, s in zip(paths, specs)}
    super().__init__(filter_specs)

  def __repr__(self):
    return f'StateSharding({dict(self.items())})'


class Carry:
  """Marks an argument / output of :func:`flax.nnx.scan` as the carry."""
