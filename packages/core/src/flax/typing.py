"""Type aliases used across Flax's APIs.

>>> from flax import typing
>>> def dense_init(key: typing.PRNGKey, shape: typing.Shape) -> typing.Array:
...   return key
>>> typing.Missing() is typing.MISSING
True
>>> repr(typing.MISSING)
'<flax.typing.Missing object>'
"""

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, Union

import jax

from flax.core.frozen_dict import FrozenDict

# Arrays, keys and dtypes.
Array = Union[jax.Array, Any]
PRNGKey = jax.Array
RNGSequences = dict[str, PRNGKey]
Dtype = Union[jax.typing.DTypeLike, Any]
Shape = Sequence[int]

K = TypeVar('K')


class Key(Hashable, Protocol):
  """A pytree path key: hashable and ordered."""

  def __lt__(self: K, value: K, /) -> bool: ...


Path = str
PathParts = tuple[Key, ...]
Leaf = Any

# Linear layers.
PrecisionLike = Union[
  None,
  str,
  jax.lax.Precision,
  tuple[str, str],
  tuple[jax.lax.Precision, jax.lax.Precision],
]
DotGeneralT = Callable[..., Array]
ConvGeneralDilatedT = Callable[..., Array]
EinsumT = Callable[..., Array]
PaddingLike = Union[str, int, Sequence[Union[int, tuple[int, int]]]]
LaxPadding = Union[str, Sequence[tuple[int, int]]]

# Initializers: ``init(key, shape, dtype) -> Array``.
Initializer = Union[jax.nn.initializers.Initializer, Callable[..., Any]]

# Variable collections.
Collection = Mapping[str, Any]
MutableCollection = dict[str, Any]
VariableDict = Mapping[str, Collection]
FrozenVariableDict = FrozenDict[str, Collection]
MutableVariableDict = dict[str, MutableCollection]
CollectionFilter = Any
PRNGFoldable = Union[int, str]
PRNGSequenceFilter = Any

# Transforms.
InOutAxis = Union[int, None]
InOutScanAxis = int
Axes = Union[int, Sequence[int]]

# Partitioning (SPMD).
LogicalNames = tuple[Union[str, None], ...]
AxisName = Union[str, tuple[str, ...], None]
LogicalRules = Sequence[tuple[str, AxisName]]
ArrayPytree = Any
LogicalPartitionSpec = Any
LogicalPartitionSpecPytree = Any
PartitionSpecPytree = Any
Sharding = tuple[AxisName, ...]
ShardingAxes = Sequence[AxisName]
HashableMapping = Mapping


class Missing:
  """Sentinel for arguments that were not given (``MISSING``).

  There is one instance, :data:`MISSING`; ``Missing()`` returns it.
  """

  _instance = None

  def __new__(cls):
    if cls._instance is None:
      cls._instance = super().__new__(cls)
    return cls._instance

  def __repr__(self):
    return '<flax.typing.Missing object>'

  def __reduce__(self):
    return (Missing, ())


MISSING = Missing()
