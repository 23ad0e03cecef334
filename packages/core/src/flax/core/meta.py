"""Axis metadata: boxes that carry information about a variable's axes.

An :class:`AxisMetadata` box wraps a value (usually a parameter) together
with metadata about its axes. Boxes are pytree nodes whose only child is the
value, so ``jax.tree_util.tree_map`` maps the value and keeps the box.
Lifted transforms that add an axis (``nn.vmap``, ``nn.scan``) call
``add_axis`` / ``remove_axis`` so that the metadata follows.

:class:`Partitioned` records the mesh-axis name of each array dimension:

>>> import jax, jax.numpy as jnp
>>> from flax.core import meta
>>> init = meta.with_partitioning(jax.nn.initializers.ones, (None, 'model'))
>>> boxed = init(jax.random.key(0), (2, 3))
>>> jax.tree_util.tree_map(jnp.shape, boxed)
Partitioned(value=(2, 3), names=(None, 'model'), mesh=None)
>>> meta.get_partition_spec({'kernel': boxed, 'bias': jnp.zeros(3)})
{'bias': P(), 'kernel': P(None, 'model')}
>>> meta.unbox(boxed).shape
(2, 3)
"""

import abc
import functools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec

from flax import errors
from flax import struct

__all__ = [
  'AxisMetadata',
  'PARTITION_NAME',
  'Partitioned',
  'add_axis',
  'get_global_mesh',
  'global_mesh_defined',
  'get_partition_spec',
  'get_sharding',
  'is_axis_metadata',
  'map_axis_meta',
  'remove_axis',
  'replace_boxed',
  'unbox',
  'with_partitioning',
]

A = TypeVar('A')
B = TypeVar('B')
TAxisMetadata = TypeVar('TAxisMetadata', bound='AxisMetadata[Any]')

# Key of ``metadata_params`` that names the axis a transform adds.
PARTITION_NAME = 'partition_name'

LogicalNames = tuple[Any, ...]


class AxisMetadata(Generic[A], metaclass=abc.ABCMeta):
  """Abstract base of boxes that hold a value and metadata about its axes.

  Subclasses must be pytrees whose leaves are the leaves of the boxed value
  (``flax.struct.PyTreeNode`` with the metadata in static fields is the usual
  way), and implement ``unbox``, ``replace_boxed``, ``add_axis`` and
  ``remove_axis``. ``add_axis`` and ``remove_axis`` must be inverses.
  """

  @abc.abstractmethod
  def unbox(self) -> A:
    """Returns the boxed value (Modules see this when they read it)."""

  def get_value(self) -> A:
    """Same as ``unbox``."""
    return self.unbox()

  @abc.abstractmethod
  def replace_boxed(self, val: B) -> 'AxisMetadata[B]':
    """Returns the same box holding ``val``."""

  @abc.abstractmethod
  def add_axis(
    self: TAxisMetadata, index: int, params: dict[Any, Any]
  ) -> TAxisMetadata:
    """Returns the metadata after a transform inserted axis ``index``.

    Args:
      index: the position of the new axis.
      params: the transform's ``metadata_params``.
    """

  @abc.abstractmethod
  def remove_axis(
    self: TAxisMetadata, index: int, params: dict[Any, Any]
  ) -> TAxisMetadata:
    """Returns the metadata after a transform removed axis ``index``."""


def is_axis_metadata(val: Any) -> bool:
  """Whether ``val`` is an :class:`AxisMetadata` box."""
  return isinstance(val, AxisMetadata)


def map_axis_meta(fn: Callable[[AxisMetadata], Any], tree: Any) -> Any:
  """Applies ``fn`` to every box in ``tree``; other leaves are kept."""
  return jax.tree_util.tree_map(
    lambda x: fn(x) if isinstance(x, AxisMetadata) else x,
    tree,
    is_leaf=is_axis_metadata,
  )


def add_axis(tree: Any, index: int, params: dict[Any, Any]) -> Any:
  """Calls ``add_axis(index, params)`` on every box in ``tree``."""
  return map_axis_meta(lambda x: x.add_axis(index, params), tree)


def remove_axis(tree: Any, index: int, params: dict[Any, Any]) -> Any:
  """Calls ``remove_axis(index, params)`` on every box in ``tree``."""
  return map_axis_meta(lambda x: x.remove_axis(index, params), tree)


def unbox(tree: Any) -> Any:
  """Replaces every box in ``tree`` by its unboxed value."""
  return map_axis_meta(lambda x: x.unbox(), tree)


def replace_boxed(tree: Any, updates: Any) -> Any:
  """Puts the values of ``updates`` into the boxes of ``tree``.

  ``updates`` has the structure of ``unbox(tree)``; leaves of ``tree`` that
  are not boxed are replaced directly.
  """

  def update(current, new):
    if isinstance(current, AxisMetadata):
      return current.replace_boxed(replace_boxed(current.unbox(), new))
    return new

  return jax.tree_util.tree_map(update, tree, updates, is_leaf=is_axis_metadata)


# -- meshes and sharding constraints ----------------------------------------


def get_global_mesh():
  """The mesh of the current context, or None.

  That is the mesh set by ``jax.set_mesh`` / ``jax.sharding.use_mesh`` (an
  abstract mesh inside ``jit``). As in Flax 0.12.8, the mesh of an older
  ``with mesh:`` block does not count: under it, sharding constraints from
  metadata are not applied (pass the mesh explicitly, or use
  ``jax.set_mesh``).
  """
  mesh = jax.sharding.get_abstract_mesh()
  return None if mesh.empty else mesh


def global_mesh_defined() -> bool:
  """Whether a mesh is set for the context with ``jax.set_mesh``.

  >>> import jax
  >>> from flax.core import meta
  >>> meta.global_mesh_defined()
  False
  """
  return not jax.sharding.get_abstract_mesh().empty


def _spec_axes(spec):
  for entry in spec:
    if isinstance(entry, str):
      yield entry
    elif isinstance(entry, (tuple, list)):
      yield from (e for e in entry if isinstance(e, str))


# What sharding by names asks of a mesh, worked out once per mesh (meshes
# are interned and immutable; the entry keeps its mesh, so an id is not
# reused while cached): ``id(mesh) -> MeshAxes``.
_MESH_AXES: dict = {}


class MeshAxes:
  """The axis kinds of a mesh that sharding by names needs.

  Attributes:
    mesh: the mesh.
    explicit: the names of its axes of type ``Explicit``.
    uniform: whether its axes are all Explicit or all Auto (or untyped).
  """

  __slots__ = ('mesh', 'explicit', 'uniform')

  def __init__(self, mesh):
    types = getattr(mesh, 'axis_types', None) or ()
    kinds = set(types)
    self.mesh = mesh
    self.explicit = (
      frozenset(
        name
        for name, kind in zip(mesh.axis_names, types)
        if kind == jax.sharding.AxisType.Explicit
      )
      if types
      else frozenset()
    )
    self.uniform = not kinds or kinds in (
      {jax.sharding.AxisType.Explicit},
      {jax.sharding.AxisType.Auto},
    )


def mesh_axes(mesh) -> MeshAxes:
  """The (cached) :class:`MeshAxes` of ``mesh``."""
  axes = _MESH_AXES.get(id(mesh))
  if axes is None or axes.mesh is not mesh:
    if len(_MESH_AXES) >= 64:
      _MESH_AXES.clear()
    axes = _MESH_AXES[id(mesh)] = MeshAxes(mesh)
  return axes


def _uses_explicit_axes(mesh, spec) -> bool:
  explicit = mesh_axes(mesh).explicit
  return bool(explicit) and any(axis in explicit for axis in _spec_axes(spec))


def apply_sharding_constraint(value, spec: PartitionSpec, mesh=None):
  """Shards ``value`` as ``spec`` says, if there is a mesh.

  With ``mesh`` (or else the context mesh, see :func:`get_global_mesh`)
  this is ``jax.lax.with_sharding_constraint``, or ``jax.sharding.reshard``
  when the spec uses axes of type ``Explicit``. Without a mesh ``value`` is
  returned unchanged.
  """
  if mesh is None:
    mesh = get_global_mesh()
    if mesh is None:
      return value
    target = spec
  else:
    target = NamedSharding(mesh, spec)
  if _uses_explicit_axes(mesh, spec):
    return jax.sharding.reshard(value, target)
  return jax.lax.with_sharding_constraint(value, target)


# -- Partitioned -------------------------------------------------------------


class Partitioned(struct.PyTreeNode, AxisMetadata[A]):
  """A value with the mesh-axis name of each of its dimensions.

  Usually created by an initializer wrapped with :func:`with_partitioning`.
  When a Module reads the value, it is constrained to the sharding
  ``PartitionSpec(*names)`` if a mesh is given here or set in the context
  (``jax.set_mesh``); otherwise it is returned as it is.

  Attributes:
    value: the boxed value (a pytree child).
    names: one mesh-axis name (or None, for an unsharded dimension) per
      dimension of the value (static).
    mesh: optional mesh to shard over (static); by default the context's.
  """

  value: Any
  names: LogicalNames = struct.field(pytree_node=False)
  mesh: Any = struct.field(default=None, pytree_node=False)

  def unbox(self, apply_constraint: bool = True) -> A:
    """Returns the value, sharding-constrained when a mesh is available."""
    if not apply_constraint:
      return self.value
    return apply_sharding_constraint(
      self.value, self.get_partition_spec(), self.mesh
    )

  def replace_boxed(self, val: B) -> 'Partitioned[B]':
    return self.replace(value=val)

  def _partition_name(self, params: dict[Any, Any]):
    if PARTITION_NAME not in params:
      raise errors.PartitioningUnspecifiedError(self)
    return params[PARTITION_NAME]

  def add_axis(self, index: int, params: dict[Any, Any]) -> 'Partitioned[A]':
    name = self._partition_name(params)
    # Unnamed (None) axes fill any gap before ``index``.
    padded = (*self.names, *[None] * (index - len(self.names)))
    return self.replace(names=(*padded[:index], name, *padded[index:]))

  def remove_axis(self, index: int, params: dict[Any, Any]) -> 'Partitioned[A]':
    name = self._partition_name(params)
    names = list(self.names)
    removed = names.pop(index)
    if removed != name:
      raise ValueError(
        f'Expected to remove the axis named {name!r} at index {index} of '
        f'{type(self).__name__} names {self.names}, found {removed!r}.'
      )
    return self.replace(names=tuple(names))

  def get_partition_spec(self) -> PartitionSpec:
    """``PartitionSpec(*names)``."""
    return PartitionSpec(*self.names)

  def to_nnx_metadata(self) -> dict[str, Any]:
    """The box as NNX Variable metadata (``out_sharding`` holds the names).

    >>> from flax.core import meta
    >>> meta.Partitioned(1, ('data',)).to_nnx_metadata()
    {'value': 1, 'mesh': None, 'out_sharding': ('data',)}
    """
    return {'value': self.value, 'mesh': self.mesh, 'out_sharding': self.names}

  @classmethod
  def from_nnx_metadata(cls, metadata: dict[str, Any]) -> 'Partitioned[Any]':
    """Builds the box from NNX Variable metadata (see ``to_nnx_metadata``).

    Raises:
      KeyError: if ``value`` or ``out_sharding`` is missing.
    """
    return cls(
      metadata['value'],
      metadata['out_sharding'],
      mesh=metadata.get('mesh'),
    )

  def get_sharding(self, mesh) -> NamedSharding:
    """The ``NamedSharding`` of the value on ``mesh``."""
    return NamedSharding(mesh, self.get_partition_spec())


def with_partitioning(
  fn: Callable[..., Any], names: LogicalNames, mesh=None
) -> Callable[..., Partitioned[Any]]:
  """Wraps an initializer so that it returns a :class:`Partitioned` box.

  >>> import jax
  >>> from flax.core import meta
  >>> init = meta.with_partitioning(jax.nn.initializers.zeros, ('data',))
  >>> init(jax.random.key(0), (4,)).names
  ('data',)

  Args:
    fn: the initializer.
    names: the mesh-axis name (or None) of each dimension.
    mesh: optional mesh stored in the box.
  """

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    return Partitioned(fn(*args, **kwargs), names, mesh=mesh)

  return wrapper


def _is_axis_metadata(x) -> bool:
  return isinstance(x, AxisMetadata)


def _leaf_partition_spec(x):
  if hasattr(x, 'get_partition_spec'):
    return x.get_partition_spec()
  if hasattr(x, 'shape'):
    return PartitionSpec()
  return None


def get_partition_spec(tree: Any) -> Any:
  """The ``PartitionSpec`` of every leaf of ``tree``.

  Boxes give their own spec, other arrays (anything with a ``shape``) are
  replicated (``PartitionSpec()``), and other leaves become None.
  """
  return jax.tree_util.tree_map(
    _leaf_partition_spec, tree, is_leaf=_is_axis_metadata
  )


def get_sharding(tree: Any, mesh) -> Any:
  """The ``NamedSharding`` on ``mesh`` of every array leaf of ``tree``."""
  return jax.tree_util.tree_map(
    lambda spec: NamedSharding(mesh, spec),
    get_partition_spec(tree),
    is_leaf=lambda x: isinstance(x, PartitionSpec),
  )
