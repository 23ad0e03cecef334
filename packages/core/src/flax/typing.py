"""Type aliases used across Flax's APIs.

>>> from flax import typing
>>> def dense_init(key: typing.PRNGKey, shape: typing.Shape) -> typing.Array:
...   return key
>>> typing.Missing() is typing.MISSING
True
>>> repr(typing.MISSING)
'<flax.typing.Missing object>'
"""

import abc
import collections
import dataclasses
import functools
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeGuard, TypeVar, Union

import jax
import numpy as np

from flax.core.frozen_dict import FrozenDict

# Arrays, keys, shapes and dtypes.
Array = Union[jax.Array, Any]
Shape = Sequence[int]
Dtype = Union[jax.typing.DTypeLike, Any]
PRNGKey = jax.Array
RNGSequences = dict[str, PRNGKey]
PRNGFoldable = Union[int, str]
PRNGSequenceFilter = Any

K = TypeVar('K')


class Key(Hashable, Protocol):
  """A pytree path key: hashable and ordered."""

  def __lt__(self: K, value: K, /) -> bool: ...


Leaf = Any
Path = str
PathParts = tuple[Key, ...]

# What linear and convolution layers accept.
_Precision = jax.lax.Precision
PrecisionLike = Union[
  None, str, _Precision, tuple[str, str], tuple[_Precision, _Precision]
]
PaddingLike = Union[str, int, Sequence[Union[int, tuple[int, int]]]]
LaxPadding = Union[str, Sequence[tuple[int, int]]]
# Stand-ins for lax.dot_general, lax.conv_general_dilated and jnp.einsum.
DotGeneralT = ConvGeneralDilatedT = EinsumT = Callable[..., Array]

# ``init(key, shape, dtype) -> Array``.
Initializer = Union[jax.nn.initializers.Initializer, Callable[..., Any]]

# Variable collections: read-only, mutable and frozen forms.
Collection = Mapping[str, Any]
VariableDict = Mapping[str, Collection]
CollectionFilter = Any
MutableCollection = dict[str, Any]
MutableVariableDict = dict[str, MutableCollection]
FrozenVariableDict = FrozenDict[str, Collection]

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


T = TypeVar('T')
F = TypeVar('F', bound=Callable[..., Any])
HA = TypeVar('HA', bound=Hashable)
HB = TypeVar('HB')


@dataclasses.dataclass(frozen=True)
class In(Generic[T]):
  """Marks a ``variable_axes`` entry of a lifted transform as input-only.

  The collection goes into the transform with axis ``axis`` but is not
  returned from it (so it is immutable inside).

  >>> from flax.typing import In, Out
  >>> In(0), Out(1)
  (In(axis=0), Out(axis=1))
  """

  axis: T


@dataclasses.dataclass(frozen=True)
class Out(Generic[T]):
  """Marks a ``variable_axes`` entry as output-only (created inside)."""

  axis: T


InOutAxis = Union[Axes, In[Axes], Out[Axes]]
InOutScanAxis = Union[int, In[int], Out[int]]


class HashableMapping(Mapping[HA, HB], Hashable):
  """An immutable, hashable mapping; equal to another with the same items.

  >>> from flax.typing import HashableMapping
  >>> m = HashableMapping({'b': 1, 'a': 2})
  >>> m == HashableMapping({'a': 2, 'b': 1}), m.update({'c': 3})
  (True, {'b': 1, 'a': 2, 'c': 3})

  Args:
    mapping: the items.
    copy: copy ``mapping`` (otherwise later changes to it show through).
  """

  def __init__(self, mapping: Mapping[HA, HB], copy: bool = True):
    self._mapping = dict(mapping) if copy else mapping

  def __getitem__(self, key: HA) -> HB:
    return self._mapping[key]

  def __contains__(self, key) -> bool:
    return key in self._mapping

  def __iter__(self) -> Iterator[HA]:
    return iter(self._mapping)

  def __len__(self) -> int:
    return len(self._mapping)

  def __hash__(self) -> int:
    return hash(frozenset(self._mapping.items()))

  def __eq__(self, other) -> bool:
    return (
      isinstance(other, HashableMapping) and self._mapping == other._mapping
    )

  def __repr__(self) -> str:
    return repr(self._mapping)

  def update(self, other: Mapping[HA, HB]) -> 'HashableMapping[HA, HB]':
    """Returns a new mapping with the items of ``other`` added."""
    return HashableMapping({**self._mapping, **other})


class PytreeDeque(collections.deque):
  """A ``collections.deque`` that is a pytree (its items are children)."""


jax.tree_util.register_pytree_node(
  PytreeDeque,
  lambda d: (tuple(d), ()),
  lambda _, children: PytreeDeque(children),
)


def _bytes_repr(num_bytes: int) -> str:
  for scale, unit in ((1e9, 'GB'), (1e6, 'MB'), (1e3, 'KB')):
    if num_bytes > scale:
      return f'{num_bytes / scale:,.1f} {unit}'
  return f'{num_bytes:,} B'


@dataclasses.dataclass
class SizeBytes:
  """A number of array elements and the bytes they take.

  >>> import jax.numpy as jnp
  >>> from flax.typing import SizeBytes
  >>> SizeBytes.from_any({'w': jnp.ones((2, 3)), 'b': jnp.ones(750)})
  756 (3.0 KB)
  """

  size: int
  bytes: int

  def __add__(self, other: 'SizeBytes') -> 'SizeBytes':
    return SizeBytes(self.size + other.size, self.bytes + other.bytes)

  def __repr__(self) -> str:
    return f'{self.size:,} ({_bytes_repr(self.bytes)})'

  @classmethod
  def from_array(cls, x) -> 'SizeBytes':
    """The size and bytes of one array (anything with shape and dtype)."""
    size = int(np.prod(x.shape, dtype=np.int64))
    return cls(size, size * np.dtype(x.dtype).itemsize)

  @classmethod
  def from_any(cls, x) -> 'SizeBytes':
    """The total over the array leaves of pytree ``x`` (others count 0)."""
    total = cls(0, 0)
    for leaf in jax.tree_util.tree_leaves(x):
      if has_shape_dtype(leaf):
        total = total + cls.from_array(leaf)
    return total


class ShapeDtype(Protocol):
  """Anything with a ``shape`` and a ``dtype`` (arrays, ShapeDtypeStruct)."""

  shape: Shape
  dtype: Dtype


def has_shape_dtype(x: Any) -> TypeGuard[ShapeDtype]:
  """Whether ``x`` has both a ``shape`` and a ``dtype``."""
  return hasattr(x, 'shape') and hasattr(x, 'dtype')


def is_key_like(x: Any) -> TypeGuard[Key]:
  """Whether ``x`` looks like a path key (has ``__hash__`` and ``__lt__``)."""
  return hasattr(x, '__hash__') and hasattr(x, '__lt__')


class PromoteDtypeFn(Protocol):
  """``fn(args, *, dtype=None, inexact=True) -> args`` promoting dtypes."""

  def __call__(
    self, args: T, /, *, dtype: Any = None, inexact: bool = True
  ) -> T: ...


class BaseConfigContext(abc.ABC):
  """Base of settings held on a per-class stack, used as a call, a context
  manager or a decorator.

  Called on its own, an instance replaces the innermost value (or pushes a
  first one); as a ``with`` block or a decorator the value holds until the
  block (or each call) ends, and the value in force before comes back.
  :meth:`current_value` is the innermost value, else :meth:`get_default`.
  Subclasses provide the stack (:meth:`get_stack`).

  >>> from flax.typing import BaseConfigContext
  >>> class Precision(BaseConfigContext):
  ...   _stack = []
  ...   @classmethod
  ...   def get_stack(cls):
  ...     return cls._stack
  >>> with Precision('high'):
  ...   Precision.current_value()
  'high'
  >>> Precision.current_value() is None
  True
  >>> _ = Precision('low')  # a plain call sets the value
  >>> Precision.current_value()
  'low'
  """

  def __init__(self, value, /):
    stack = type(self).get_stack()
    self.prev_value = stack[-1] if stack else None
    self.new_value = value
    # Whether construction replaced an existing innermost value (rather
    # than pushing a first one); a with block or decorator undoes it.
    self._replaced = bool(stack)
    if stack:
      stack[-1] = value
    else:
      stack.append(value)

  @classmethod
  def get_default(cls) -> Any:
    """The value when no context is active (None unless overridden)."""
    return None

  @classmethod
  @abc.abstractmethod
  def get_stack(cls) -> list:
    """The list used as this class's stack of values."""

  @classmethod
  def current_value(cls) -> Any:
    """The innermost value, or :meth:`get_default`."""
    stack = cls.get_stack()
    return stack[-1] if stack else cls.get_default()

  def _undo_construction(self, stack) -> None:
    if self._replaced:
      stack[-1] = self.prev_value
    elif stack:
      stack.pop()
    self._replaced = False

  def __enter__(self):
    stack = type(self).get_stack()
    if self._replaced:
      self._undo_construction(stack)
      stack.append(self.new_value)
    return None

  def __exit__(self, exc_type, exc_value, traceback):
    type(self).get_stack().pop()

  def __call__(self, f: F) -> F:
    """Decorates ``f`` so that the value holds while ``f`` runs."""
    cls = type(self)
    value = self.new_value
    self._undo_construction(cls.get_stack())

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
      stack = cls.get_stack()
      stack.append(value)
      try:
        return f(*args, **kwargs)
      finally:
        stack.pop()

    return wrapper  # type: ignore[return-value]
