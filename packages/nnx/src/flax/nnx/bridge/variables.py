"""Moving variables between Linen collections and NNX Variables.

A Linen variable lives in a collection (``'params'``, ``'batch_stats'``,
...) and may be boxed in :class:`flax.core.meta.AxisMetadata` (for example
``Partitioned``). An NNX Variable carries its collection as its type and its
metadata as attributes. The collection name and the Variable type are paired
by :func:`flax.nnx.register_variable_name`; unknown collection names get a
fresh Variable subclass of that name.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> from flax.nnx.bridge import variables as bv
>>> bv.to_nnx_var('batch_stats', jnp.zeros(2)).type.__name__
'BatchStat'
>>> bv.to_linen_var(nnx.Param(jnp.ones(2))).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import typing as tp
from collections.abc import Mapping

import jax
from flax import struct
from flax.core import meta
from flax.nnx import variablelib
from flax.nnx.variablelib import Variable

A = tp.TypeVar('A')
B = tp.TypeVar('B')

# Metadata every Variable may carry by default; a Variable whose metadata
# holds nothing else converts to a bare array.
_DEFAULT_METADATA = ('hijax', 'ref', 'eager_sharding')
# Metadata keys that name the sharding of a Variable's value.
_SHARDING_KEYS = ('out_sharding', 'sharding_names', 'sharding')


class NNXMeta(struct.PyTreeNode, meta.AxisMetadata[A]):
  """An NNX Variable's type and metadata, boxed for a Linen collection.

  Linen code sees it as any other :class:`~flax.core.meta.AxisMetadata`
  box (``nn.unbox`` returns the value); converting back with
  :meth:`to_nnx_variable` restores the Variable with its metadata.

  >>> import jax
  >>> from flax import nnx
  >>> from flax.nnx.bridge import NNXMeta
  >>> box = NNXMeta(nnx.Param, 1.0, {'out_sharding': ('a',)})
  >>> box.unbox()
  1.0
  >>> box.get_partition_spec() == jax.sharding.PartitionSpec('a')
  True
  >>> box.to_nnx_variable().type.__name__
  'Param'
  """

  var_type: type[Variable[tp.Any]] = struct.field(pytree_node=False)
  value: tp.Any = struct.field(pytree_node=True)
  metadata: dict[str, tp.Any] = struct.field(pytree_node=False)

  def unbox(self) -> A:
    return self.value

  def replace_boxed(self, val: B) -> NNXMeta[B]:
    return self.replace(value=val)  # type: ignore[return-value]

  def add_axis(self, index: int, params: dict[tp.Any, tp.Any]) -> NNXMeta[A]:
    # The box keeps the metadata of the Variable it was made from; lifted
    # Linen transforms see its value with the new axis.
    return self

  def remove_axis(self, index: int, params: dict[tp.Any, tp.Any]) -> NNXMeta[A]:
    return self

  def get_partition_spec(self) -> jax.sharding.PartitionSpec:
    """The ``PartitionSpec`` of the sharding names in the metadata
    (replicated, ``PartitionSpec()``, without any)."""
    for key in _SHARDING_KEYS:
      names = self.metadata.get(key)
      if names is not None:
        return jax.sharding.PartitionSpec(*names)
    return jax.sharding.PartitionSpec()

  def to_nnx_variable(self) -> Variable:
    """The NNX Variable this box stands for."""
    return self.var_type(self.value, **self.metadata)


def is_vanilla_variable(vs: Variable) -> bool:
  """Whether ``vs`` has no metadata beyond the defaults of every Variable.

  Such a Variable converts to its bare value in a Linen collection.
  """
  return all(key in _DEFAULT_METADATA for key in vs.get_metadata())


def to_linen_var(vs: Variable) -> meta.AxisMetadata:
  """The Linen form of the NNX Variable ``vs``.

  A Variable made from a Linen box (its metadata has ``linen_meta_type``)
  becomes that box again, a Variable without metadata becomes its bare
  value, and any other becomes an :class:`NNXMeta`.
  """
  metadata = dict(vs.get_metadata())
  linen_type = metadata.pop('linen_meta_type', None)
  value = vs.get_value()
  if linen_type is None:
    # A plain Variable is its value; others keep their type and metadata.
    return (
      value if is_vanilla_variable(vs) else NNXMeta(type(vs), value, metadata)
    )
  own = {k: v for k, v in metadata.items() if k not in _DEFAULT_METADATA}
  from_nnx = getattr(linen_type, 'from_nnx_metadata', None)
  if from_nnx is not None:
    return from_nnx({'value': value, **own})
  return linen_type(value, **own)


def get_col_name(keypath: tp.Sequence[tp.Any]) -> str:
  """The Linen collection name at the head of a ``jax.tree_util`` key path.

  >>> import jax
  >>> from flax.nnx.bridge import variables as bv
  >>> bv.get_col_name((jax.tree_util.DictKey('params'),))
  'params'
  """
  if not keypath:
    raise ValueError('An empty key path has no collection name.')
  head = keypath[0]
  if isinstance(head, jax.tree_util.DictKey):
    return str(head.key)
  if isinstance(head, jax.tree_util.GetAttrKey):
    return head.name
  raise ValueError(
    f'Expected a key path starting with a DictKey or GetAttrKey, got {head!r}.'
  )


def to_nnx_var(col: str, x: meta.AxisMetadata | tp.Any) -> Variable:
  """The NNX Variable for the value ``x`` of Linen collection ``col``.

  Raises:
    ValueError: if ``x`` is an :class:`NNXMeta` whose Variable type is not
      the one registered for ``col``.
  """
  vtype = variablelib.variable_type_from_name(col, allow_register=True)
  if isinstance(x, NNXMeta):
    if x.var_type is not vtype:
      raise ValueError(
        f'Variable type {x.var_type.__name__} stored in NNXMeta does not '
        f'match the type {vtype.__name__} registered for collection '
        f'{col!r}.'
      )
    return x.to_nnx_variable()
  if isinstance(x, meta.AxisMetadata):
    if hasattr(x, 'to_nnx_metadata'):
      metadata = dict(x.to_nnx_metadata())
      value = metadata.pop('value')
    else:
      metadata, value = {}, x.unbox()
    return vtype(value, **metadata, linen_meta_type=type(x))
  return vtype(x)


def _depth(t: type) -> int:
  return len(t.__mro__)


def sort_variable_types(types: tp.Iterable[type]):
  """Sorts Variable types so that subclasses come before their bases.

  Types at the same depth keep their order, so a filter list made from the
  result matches each Variable by its most specific type first.
  """
  return sorted(types, key=_depth, reverse=True)


def _flat_items(tree, prefix=(), *, sort=False):
  items = tree.items()
  if sort:
    items = sorted(items, key=lambda kv: str(kv[0]))
  for key, value in items:
    path = (*prefix, key)
    if isinstance(value, Mapping) and not isinstance(value, meta.AxisMetadata):
      yield from _flat_items(value, path, sort=sort)
    else:
      yield path, value


def _set_nested(tree: dict, path, value) -> None:
  for key in path[:-1]:
    tree = tree.setdefault(key, {})
  tree[path[-1]] = value


def linen_vars_to_nnx_attrs(
  variables: Mapping[str, tp.Any],
) -> dict[str, tp.Any]:
  """Converts Linen variables ``{collection: tree}`` to NNX attributes.

  The result is a nested dict keyed by variable path (without the
  collection), whose leaves are Variables of the collection's type.
  Collections, and the names within each, are read in sorted order.

  >>> import jax.numpy as jnp
  >>> from flax.nnx.bridge import variables as bv
  >>> attrs = bv.linen_vars_to_nnx_attrs(
  ...   {'params': {'w': jnp.ones(1)}, 'batch_stats': {'m': jnp.zeros(1)}}
  ... )
  >>> {k: type(v).__name__ for k, v in attrs.items()}
  {'m': 'BatchStat', 'w': 'Param'}
  """
  attrs: dict[str, tp.Any] = {}
  for col in sorted(variables):
    tree = variables[col]
    if not isinstance(tree, Mapping):
      raise ValueError(
        f'Linen collection {col!r} must be a mapping of variables, got '
        f'{type(tree).__name__}.'
      )
    for path, x in _flat_items(tree, sort=True):
      _set_nested(attrs, path, to_nnx_var(col, x))
  return attrs


def nnx_attrs_to_linen_vars(nnx_attrs: dict) -> dict:
  """Converts nested NNX attributes to Linen variables (the inverse of
  :func:`linen_vars_to_nnx_attrs`).

  Each Variable goes to the collection registered for its type, in the
  form given by :func:`to_linen_var`; collections appear in the order their
  first Variable is found.
  """
  linen_vars: dict[str, tp.Any] = {}
  for path, var in _flat_items(nnx_attrs):
    if not isinstance(var, Variable):
      raise ValueError(
        f'Expected an NNX Variable at {"/".join(map(str, path))}, got '
        f'{type(var).__name__}.'
      )
    col = variablelib.variable_name_from_type(type(var), allow_register=True)
    _set_nested(linen_vars, (col, *path), to_linen_var(var))
  return linen_vars


def with_partitioning(
  fn: tp.Callable[..., tp.Any],
  names: tuple[str | None, ...],
  mesh: jax.sharding.Mesh | None = None,
) -> tp.Callable[..., meta.Partitioned[tp.Any]]:
  """Wraps an initializer so that both APIs see its sharding names.

  In NNX the result becomes a Variable with ``out_sharding=names``; through
  :class:`~flax.nnx.bridge.ToLinen` it is stored in Linen as a
  ``Partitioned`` box with the same names.

  >>> import jax
  >>> from flax import nnx
  >>> from flax.nnx import bridge
  >>> init = bridge.with_partitioning(jax.nn.initializers.ones, ('a', None))
  >>> init(jax.random.key(0), (2, 3)).metadata['out_sharding']
  ('a', None)
  """
  return variablelib.with_metadata(
    fn,
    out_sharding=names,
    mesh=mesh,
    linen_meta_type=meta.Partitioned,
  )
