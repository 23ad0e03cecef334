"""Sharding by logical axis names: constraints and LogicallyPartitioned.

>>> import jax, jax.numpy as jnp
>>> from flax import spmd
>>> init = spmd.with_logical_partitioning(jax.nn.initializers.ones,
...                                       ('embed', 'mlp'))
>>> jax.tree_util.tree_map(jnp.shape, init(jax.random.key(0), (2, 3)))
LogicallyPartitioned(value=(2, 3), names=('embed', 'mlp'), mesh=None, rules=None)
"""

import enum
import functools
import sys
from collections.abc import Callable
from typing import Any

import jax
from jax.sharding import PartitionSpec

from flax import struct
from flax.core import meta
from flax.spmd import _backends
from flax.spmd import _rules

__all__ = [
  'LogicallyPartitioned',
  'RulesFallback',
  'with_logical_constraint',
  'with_logical_partitioning',
]


class RulesFallback(enum.Enum):
  """What ``with_logical_constraint`` does for names that no rule matches.

  Attributes:
    AXIS_IS_UNSHARDED: leave that dimension unsharded (the default).
    RAISE_ERROR: raise a ``ValueError``.
    NO_CONSTRAINT: apply no constraint to the array at all.
  """

  AXIS_IS_UNSHARDED = 'axis_is_unsharded'
  RAISE_ERROR = 'raise_error'
  NO_CONSTRAINT = 'no_constraint'


def _is_logical_spec(x) -> bool:
  if x is None or isinstance(x, PartitionSpec):
    return True
  return isinstance(x, tuple) and all(
    e is None or e is PartitionSpec.UNCONSTRAINED or isinstance(e, (str, tuple))
    for e in x
  )


def _with_sharding_constraint(x, axis_resources, mesh=None):
  """Constrains ``x`` to the mesh-axis spec ``axis_resources``.

  The constraint is applied on ``mesh`` (else on the context mesh) by the
  current partitioning backend; without a mesh, or with ``axis_resources``
  None, ``x`` is returned unchanged.
  """
  if axis_resources is None:
    return x
  return _backends.current_backend().constrain(x, axis_resources, mesh)


def _constrain_fn():
  # Looked up on the package at call time, so that patching
  # ``flax.spmd._with_sharding_constraint`` reaches every constraint.
  return getattr(sys.modules[__package__], '_with_sharding_constraint')


def _with_sharding_constraint_one_fallback(
  axis_resources,
  x,
  fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
  rules: _rules.LogicalRules | None = None,
  mesh=None,
):
  """Constrains one array by logical names, or applies ``fallback``."""
  assignment = _rules.logical_to_mesh_assignment(axis_resources, rules)
  if assignment is None:
    return _constrain_fn()(x, None, mesh=mesh)
  if any(a is _rules.UNASSIGNED for a in assignment):
    if fallback == RulesFallback.RAISE_ERROR:
      raise ValueError(f'Axis names {axis_resources} did not match a rule')
    if fallback == RulesFallback.NO_CONSTRAINT:
      return x
  spec = PartitionSpec(
    *(None if a is _rules.UNASSIGNED else a for a in assignment)
  )
  return _constrain_fn()(x, spec, mesh=mesh)


def with_logical_constraint(
  x: Any,
  logical_axis_resources: Any,
  rules: _rules.LogicalRules | None = None,
  mesh=None,
  fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
):
  """Constrains the sharding of ``x``, given logical axis names.

  The names are mapped to mesh axes with ``rules`` (by default the current
  logical axis rules), then ``x`` is constrained to that sharding on
  ``mesh`` (by default the context mesh, e.g. of ``jax.set_mesh``). Without
  rules, names or a mesh, ``x`` is returned unchanged.

  >>> import jax.numpy as jnp
  >>> from flax import spmd
  >>> y = spmd.with_logical_constraint(jnp.ones((4, 2)), ('batch', 'embed'))
  >>> y.shape
  (4, 2)

  Args:
    x: an array, or a pytree of arrays.
    logical_axis_resources: the logical names of ``x``'s dimensions (a tuple
      or ``PartitionSpec``), or a pytree of them matching ``x``.
    rules: the logical axis rules.
    mesh: the mesh; by default the context's.
    fallback: what to do with names no rule matches (``RulesFallback``).

  Returns:
    ``x``, constrained.
  """
  if rules is None:
    rules = _rules.get_logical_axis_rules()
  if not rules or logical_axis_resources is None:
    return x
  if not isinstance(fallback, RulesFallback):
    fallback = RulesFallback(fallback)
  constrain = functools.partial(
    _with_sharding_constraint_one_fallback,
    fallback=fallback,
    rules=rules,
    mesh=mesh,
  )
  if _is_logical_spec(logical_axis_resources):
    return constrain(logical_axis_resources, x)
  return jax.tree_util.tree_map(
    constrain, logical_axis_resources, x, is_leaf=_is_logical_spec
  )


class LogicallyPartitioned(meta.Partitioned):
  """A ``Partitioned`` box whose names are logical axis names.

  ``get_partition_spec()`` gives the logical spec; map it to mesh axes with
  ``logical_to_mesh``. When a Module reads the value, it is constrained
  through ``with_logical_constraint`` with the box's ``rules`` (default: the
  current rules) if there is a mesh.

  Attributes:
    value: the boxed value.
    names: the logical name (or None) of each dimension (static).
    mesh: optional mesh (static).
    rules: optional logical axis rules (static).
  """

  rules: Any = struct.field(default=None, pytree_node=False)

  def to_nnx_metadata(self) -> dict[str, Any]:
    """The box as NNX Variable metadata (names, mesh and sharding rules)."""
    metadata = super().to_nnx_metadata()
    metadata['sharding_rules'] = self.rules
    return metadata

  @classmethod
  def from_nnx_metadata(
    cls, metadata: dict[str, Any]
  ) -> 'LogicallyPartitioned':
    """Builds the box from NNX Variable metadata (see ``to_nnx_metadata``).

    Raises:
      KeyError: if ``value``, ``out_sharding`` or ``sharding_rules`` is
        missing.
    """
    return cls(
      metadata['value'],
      metadata['out_sharding'],
      mesh=metadata.get('mesh'),
      rules=metadata['sharding_rules'],
    )

  def unbox(self, apply_constraint: bool = True) -> Any:
    """Returns the value, constrained by its logical names if possible."""
    if not apply_constraint:
      return self.value
    return with_logical_constraint(
      self.value, self.get_partition_spec(), rules=self.rules, mesh=self.mesh
    )


def with_logical_partitioning(
  fn: Callable[..., Any],
  names: tuple[str | None, ...],
  mesh=None,
  rules: _rules.LogicalRules | None = None,
) -> Callable[..., LogicallyPartitioned]:
  """Wraps an initializer so that it returns a ``LogicallyPartitioned`` box.

  Args:
    fn: the initializer.
    names: the logical name (or None) of each dimension.
    mesh: optional mesh stored in the box.
    rules: optional logical axis rules stored in the box.
  """

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    return LogicallyPartitioned(
      fn(*args, **kwargs), names, mesh=mesh, rules=rules
    )

  return wrapper
