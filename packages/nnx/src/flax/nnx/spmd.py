"""Sharding helpers for NNX Variables (``out_sharding`` metadata).

A Variable names the mesh axes (or logical axes, mapped by
``nnx.logical_axis_rules``) of its dimensions in its ``out_sharding``
metadata. These helpers read those names as ``PartitionSpec`` or
``NamedSharding`` trees, build abstract models with shardings, and keep the
names right when a transform adds or removes an axis.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> p = nnx.Param(jnp.ones((2, 4)), out_sharding=(None, 'model'),
...               eager_sharding=False)
>>> nnx.get_partition_spec(nnx.State({'w': p}))['w'].get_value()
P(None, 'model')
"""

from __future__ import annotations
from flax.nnx.transforms.general import eval_shape as eval_shape

import typing as tp

import jax
from jax.sharding import PartitionSpec as PartitionSpec

from flax.core import spmd as core_spmd
from flax.core.spmd import Sharding as Sharding
from flax.nnx import graphlib
from flax.nnx import variablelib
from flax.nnx.deprecations import deprecated as deprecated
from flax.nnx.pytreelib import Pytree
from flax.nnx.transforms.engine._axis_metadata import (
  PARTITION_NAME as PARTITION_NAME,
)
from flax.nnx.transforms.engine._axis_metadata import add_axis as add_axis
from flax.nnx.transforms.engine._axis_metadata import remove_axis as remove_axis
from flax.nnx.variablelib import Variable
from jax.sharding import NamedSharding

A = tp.TypeVar('A')
F = tp.TypeVar('F', bound=tp.Callable[..., tp.Any])


__all__ = [
  'PARTITION_NAME',
  'abstract_with_sharding',
  'add_axis',
  'as_abstract',
  'get_abstract_model',
  'get_named_sharding',
  'get_partition_spec',
  'get_var_pspec',
  'remove_axis',
  'with_partitioning',
]


def _is_variable(x) -> bool:
  return isinstance(x, Variable)


def get_var_pspec(v: Variable) -> PartitionSpec | None:
  """The ``PartitionSpec`` of Variable ``v`` (``P()`` without sharding).

  Logical names in ``out_sharding`` are mapped with the Variable's
  ``sharding_rules`` metadata and the current ``nnx.logical_axis_rules``.

  >>> import jax.numpy as jnp
  >>> from flax import nnx
  >>> v = nnx.Param(jnp.ones((2, 4)), out_sharding=('embed', 'mlp'),
  ...               eager_sharding=False)
  >>> with nnx.logical_axis_rules([('embed', 'data'), ('mlp', 'model')]):
  ...   nnx.spmd.get_var_pspec(v)
  P('data', 'model')
  """
  names = v.get_metadata().get('out_sharding')
  if not names:
    return PartitionSpec()
  return core_spmd.get_pspec(names, v.get_metadata().get('sharding_rules'))


def _spec_of(x):
  if _is_variable(x):
    return x.replace(get_var_pspec(x))
  return PartitionSpec()


def get_partition_spec(tree: A) -> A:
  """Maps every Variable (or array) of ``tree`` to its ``PartitionSpec``.

  Variables keep their type and metadata, with the spec as value; other
  leaves become ``P()``.
  """
  return jax.tree.map(_spec_of, tree, is_leaf=_is_variable)


def get_named_sharding(tree: A, mesh: jax.sharding.Mesh) -> A:
  """Maps every Variable (or array) of ``tree`` to a ``NamedSharding``."""

  def to_sharding(x):
    if _is_variable(x):
      return x.replace(NamedSharding(mesh, get_var_pspec(x)))
    return NamedSharding(mesh, PartitionSpec())

  return jax.tree.map(to_sharding, tree, is_leaf=_is_variable)


def with_partitioning(
  initializer: F,
  sharding: Sharding,
  mesh: jax.sharding.Mesh | None = None,
  **metadata: tp.Any,
) -> F:
  """Wraps ``initializer`` so that its Variable gets ``out_sharding``.

  >>> import jax
  >>> from flax import nnx
  >>> init = nnx.with_partitioning(jax.nn.initializers.ones, (None, 'model'))
  >>> with nnx.use_eager_sharding(False):
  ...   kernel = nnx.Param(init(jax.random.key(0), (2, 4)))
  >>> kernel.out_sharding
  (None, 'model')
  """
  if not isinstance(sharding, jax.sharding.Sharding):
    sharding = tuple(sharding)
  return variablelib.with_metadata(
    initializer, out_sharding=sharding, mesh=mesh, **metadata
  )


def _abstract_value(var: Variable, value, mesh):
  """``ShapeDtypeStruct`` of ``value`` with the sharding of ``var``."""

  spec = get_var_pspec(var)
  var_mesh = var.get_metadata().get('mesh') or mesh
  if var_mesh is None:
    var_mesh = jax.sharding.get_abstract_mesh()
    if var_mesh.empty:
      return value
  return jax.ShapeDtypeStruct(
    value.shape, value.dtype, sharding=NamedSharding(var_mesh, spec)
  )


def _map_abstract(tree, mesh, graph, keep_unsharded):
  """A copy of ``tree`` whose abstract Variable values carry shardings."""

  def convert(var):
    if not _is_variable(var):  # an array or number held by an attribute
      return var
    value = var.get_raw_value()
    if not isinstance(value, jax.ShapeDtypeStruct):
      return var
    if keep_unsharded and not var.get_metadata().get('out_sharding'):
      return var
    return var.replace(_abstract_value(var, value, mesh))

  def map_state(state):
    return jax.tree.map(convert, state, is_leaf=_is_variable)

  if isinstance(tree, Pytree):
    del graph  # graph and tree mode visit the same Variables here
    graphdef, state = graphlib.split(tree)
    return graphlib.merge(graphdef, map_state(state))
  return map_state(tree)


def as_abstract(tree: A, graph: bool | None = None) -> A:
  """Gives the abstract Variables of ``tree`` their shardings.

  Every Variable whose value is a ``jax.ShapeDtypeStruct`` (e.g. from
  ``nnx.eval_shape``) gets a ``NamedSharding`` built from its
  ``out_sharding`` on its ``mesh`` metadata or the context mesh; concrete
  values, and Variables without ``out_sharding``, are left alone. Graph
  nodes are copied (split, mapped and merged).

  Args:
    tree: a model, State or pytree with Variables.
    graph: graph or tree mode for graph nodes (both visit each Variable
      once here).
  """
  return _map_abstract(tree, None, graph, keep_unsharded=True)


# Deprecated name of ``as_abstract`` (warns when called).
abstract_with_sharding = deprecated(as_abstract)


def get_abstract_model(init_fn, mesh, *, graph: bool | None = None):
  """The graphdef and abstract state of ``init_fn()`` sharded on ``mesh``.

  ``init_fn`` runs under ``nnx.eval_shape`` with ``mesh`` as context mesh;
  every Variable's value is a ``ShapeDtypeStruct`` with a ``NamedSharding``
  on ``mesh`` (``P()`` for Variables without ``out_sharding``).

  Returns:
    ``(graphdef, state)`` as from ``nnx.split``.
  """

  with jax.set_mesh(mesh):
    abstract = eval_shape(init_fn, graph=graph)
  graphdef, state = graphlib.split(abstract)
  return graphdef, _map_abstract(state, mesh, graph, keep_unsharded=False)
