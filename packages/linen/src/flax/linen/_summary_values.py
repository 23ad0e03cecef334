"""The values shown in ``tabulate`` cells and their text.

Every leaf of a call's inputs and outputs, and of a Module's variables, is
shown through a representation: an array as its ``dtype[shape]``, a
partitioned array with its axis names, anything else as its ``repr``. A
cell's text is the YAML of the structure holding the rendered leaves
(tuples as lists, dataclasses as mappings of their fields, enum keys as
their values), without quote marks.

>>> import numpy as np
>>> from flax.linen import _summary_values as sv
>>> sv.represent_tree({'x': np.ones((2, 3), np.float32), 'flag': True})
{'flag': _ObjectRepresentation(obj=True), 'x': _ArrayRepresentation(shape=(2, 3), dtype=dtype('float32'))}
>>> print(sv.as_yaml_str(sv.normalize_structure(
...     sv.represent_tree((np.ones(2, np.int32), {'deterministic': False})))))
- [dim]int32[/dim][2]
- deterministic: False
"""

import abc
import dataclasses
import enum
import io
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import yaml

from flax.core import meta
from flax.core.frozen_dict import FrozenDict


def is_array_like(x) -> bool:
  """Arrays, NumPy scalars and shape/dtype structs; not Python scalars (an
  ``np.float64`` is a ``float``, shown as its value)."""
  return (
    hasattr(x, 'shape')
    and hasattr(x, 'dtype')
    and not isinstance(x, (bool, int, float, complex))
  )


class _ValueRepresentation(abc.ABC):
  """How one leaf is shown in a table cell."""

  @abc.abstractmethod
  def render(self) -> str:
    """The leaf's text (``rich`` markup)."""


@dataclasses.dataclass
class _ArrayRepresentation(_ValueRepresentation):
  """An array, shown as ``dtype[shape]`` (the dtype dimmed)."""

  shape: tuple[int, ...]
  dtype: Any

  @classmethod
  def from_array(cls, x) -> '_ArrayRepresentation':
    return cls(tuple(np.shape(x)), np.dtype(x.dtype))

  @classmethod
  def render_array(cls, x) -> str:
    return cls.from_array(x).render()

  def render(self) -> str:
    shape = ','.join(str(d) for d in self.shape)
    return f'[dim]{np.dtype(self.dtype).name}[/dim][{shape}]'


@dataclasses.dataclass
class _PartitionedArrayRepresentation(_ValueRepresentation):
  """A partitioned array: its array, then ``P`` and its axis names."""

  array_representation: _ArrayRepresentation
  names: tuple[str | None, ...]

  @classmethod
  def from_partitioned(
    cls, partitioned: meta.Partitioned
  ) -> '_PartitionedArrayRepresentation':
    return cls(
      _ArrayRepresentation.from_array(partitioned.value), partitioned.names
    )

  def render(self) -> str:
    return f'{self.array_representation.render()} [dim]P[/dim]{self.names}'


@dataclasses.dataclass
class _ObjectRepresentation(_ValueRepresentation):
  """Any other value, shown as its ``repr``."""

  obj: Any

  def render(self) -> str:
    return repr(self.obj)


def _is_represented_leaf(x) -> bool:
  return x is None or isinstance(x, meta.Partitioned)


def represent(x) -> _ValueRepresentation:
  """The representation of one leaf."""
  if isinstance(x, _ValueRepresentation):
    return x
  if isinstance(x, meta.Partitioned):
    return _PartitionedArrayRepresentation.from_partitioned(x)
  if is_array_like(x):
    return _ArrayRepresentation.from_array(x)
  return _ObjectRepresentation(x)


def represent_tree(tree):
  """``tree`` with every leaf (``None`` and partitioned boxes included)
  replaced by its representation."""
  return jax.tree_util.tree_map(represent, tree, is_leaf=_is_represented_leaf)


def _normalize_key(key):
  if isinstance(key, enum.Enum):
    return key.value
  if isinstance(key, tuple):
    return tuple(_normalize_key(k) for k in key)
  return key


def normalize_structure(obj):
  """The plain structure YAML shows: rendered leaves, lists, dicts."""
  if isinstance(obj, _ValueRepresentation):
    return obj.render()
  if isinstance(obj, (list, tuple)):
    return [normalize_structure(x) for x in obj]
  if isinstance(obj, (Mapping, FrozenDict)):
    return {_normalize_key(k): normalize_structure(v) for k, v in obj.items()}
  if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
    return {
      f.name: normalize_structure(getattr(obj, f.name))
      for f in dataclasses.fields(obj)
    }
  return obj


def as_yaml_str(value) -> str:
  """The YAML text of a normalized structure, quote marks removed; ``''``
  for ``None`` or an empty container."""
  if value is None or (hasattr(value, '__len__') and len(value) == 0):
    return ''
  out = io.StringIO()
  yaml.safe_dump(
    value,
    out,
    default_flow_style=False,
    indent=2,
    sort_keys=False,
    explicit_end=False,
  )
  return out.getvalue().replace('\n...', '').replace("'", '').strip()


def cell_text(tree) -> str:
  """The text of a cell showing ``tree`` (a call's inputs or outputs)."""
  return as_yaml_str(normalize_structure(represent_tree(tree)))
