"""Logical axis rules and sharding by logical names.

Arrays name their dimensions with logical names (``'batch'``, ``'embed'``,
...). Logical axis rules, an ordered sequence of ``(logical_name,
mesh_axes)`` pairs, say which mesh axes each name is sharded over. The
rules in effect are per thread: set them with :func:`set_logical_axis_rules`
or for a block with :func:`logical_axis_rules`.

>>> from flax.core import spmd
>>> with spmd.logical_axis_rules([('batch', 'data'), ('embed', None)]):
...   spmd.get_pspec(('batch', 'embed', 'length'))
P('data', None, 'length')
"""

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.experimental.layout import Format
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec

from flax.core import meta

__all__ = [
  'LogicalRules',
  'Sharding',
  'apply_rules',
  'composite_rules',
  'from_sharding_rules',
  'get_logical_axis_rules',
  'get_mesh',
  'get_pspec',
  'logical_axis_rules',
  'map_sharding',
  'set_logical_axis_rules',
  'shard_value',
]

LogicalRules = Sequence[tuple[str, str | tuple[str, ...] | None]]
Sharding = tuple[str | tuple[str, ...] | None, ...]


class _ThreadRules(threading.local):
  """The logical axis rules of the current thread (``()`` at the start)."""

  rules: LogicalRules = ()


_state = _ThreadRules()


def get_logical_axis_rules() -> LogicalRules:
  """Returns the logical axis rules of the current thread.

  >>> from flax.core import spmd
  >>> spmd.get_logical_axis_rules()
  ()
  """
  return _state.rules


def set_logical_axis_rules(rules: LogicalRules) -> None:
  """Sets the logical axis rules of the current thread.

  Inside a :func:`logical_axis_rules` block the new rules hold until the
  block ends, which restores the rules from before the block.
  """
  _state.rules = rules


@contextlib.contextmanager
def logical_axis_rules(rules: LogicalRules):
  """Uses ``rules`` as the current thread's rules inside a ``with`` block.

  >>> from flax.core import spmd
  >>> with spmd.logical_axis_rules([('batch', 'data')]):
  ...   spmd.get_logical_axis_rules()
  [('batch', 'data')]
  >>> spmd.get_logical_axis_rules()
  ()
  """
  previous = _state.rules
  _state.rules = rules
  try:
    yield
  finally:
    _state.rules = previous


def composite_rules(rule1: LogicalRules, rule2: LogicalRules) -> tuple:
  """Merges two sets of rules; a name mapped differently by both is an error.

  >>> from flax.core import spmd
  >>> spmd.composite_rules([('batch', 'data')], [('embed', 'model')])
  (('batch', 'data'), ('embed', 'model'))

  Raises:
    ValueError: if a logical name is mapped to different mesh axes.
  """
  if not rule1 and not rule2:
    return ()
  if not rule1:
    return tuple(rule2)
  if not rule2:
    return tuple(rule1)
  merged = dict(rule1)
  for name, axes in rule2:
    if name in merged and merged[name] != axes:
      raise ValueError(
        f'Inconsistent logical axis annotations for {name}: '
        f'{merged[name]} vs {axes}'
      )
    merged[name] = axes
  return tuple(merged.items())


def from_sharding_rules(
  sharding: Sharding, sharding_rules: LogicalRules
) -> Sharding:
  """Replaces each logical name in ``sharding`` by what the rules map it to.

  Names without a rule are kept; later rules override earlier ones.

  >>> from flax.core import spmd
  >>> spmd.from_sharding_rules(('batch', 'embed'), [('batch', 'data')])
  ('data', 'embed')
  """
  table = dict(sharding_rules)
  return tuple(
    table[entry] if _hashable(entry) and entry in table else entry
    for entry in sharding
  )


def _hashable(x) -> bool:
  try:
    hash(x)
  except TypeError:
    return False
  return True


def get_pspec(sharding, sharding_rules=None) -> PartitionSpec:
  """The ``PartitionSpec`` of logical names ``sharding`` under the rules.

  The current rules (:func:`get_logical_axis_rules`) are merged with
  ``sharding_rules`` (see :func:`composite_rules`) and applied.

  >>> from flax.core import spmd
  >>> spmd.get_pspec(('batch', None), [('batch', 'data')])
  P('data', None)

  Raises:
    ValueError: if the two sets of rules map a name differently.
  """
  return apply_rules(sharding, sharding_rules or ())


def apply_rules(sharding, sharding_rules) -> PartitionSpec:
  """Maps ``sharding`` with the current rules merged with ``sharding_rules``."""
  rules = composite_rules(get_logical_axis_rules(), sharding_rules)
  if rules:
    sharding = from_sharding_rules(sharding, rules)
  return PartitionSpec(*sharding)


def map_sharding(f: Callable[[Any], Any], sharding):
  """Applies ``f`` to every entry of a sharding (a tuple or PartitionSpec).

  >>> from flax.core import spmd
  >>> spmd.map_sharding(str.upper, ('batch', 'embed'))
  P('BATCH', 'EMBED')
  """
  if sharding is None:
    return None
  return PartitionSpec(*(f(entry) for entry in sharding))


def get_mesh(sharding):
  """The mesh of a ``NamedSharding``; None for anything else."""
  if isinstance(sharding, NamedSharding):
    return sharding.mesh
  return None


def _check_axis_types(mesh) -> None:
  """Eager sharding needs a mesh whose axes are all Explicit or all Auto."""
  if mesh is None or meta.mesh_axes(mesh).uniform:
    return
  names = ', '.join(t.name for t in mesh.axis_types)
  raise ValueError(
    'Mesh must have all axes as Explicit or all axes as Auto. Got mixed '
    f'axis types: ({names}). Sharding a value by names needs one kind '
    'of axis; build the mesh with a single axis type.'
  )


def shard_value(value, out_sharding, sharding_rules, mesh):
  """Shards ``value`` by logical names ``out_sharding`` on ``mesh``.

  The names are mapped with ``sharding_rules`` (see :func:`get_pspec`).
  Without ``out_sharding`` the value is returned as it is; without
  ``mesh`` the context mesh (``jax.set_mesh``) is used. A concrete
  ``jax.sharding.Sharding`` or a ``Format`` (layout and sharding) places
  the value as it is (``jax.device_put``, or a sharding constraint under
  tracing).

  Raises:
    ValueError: if there is neither a ``mesh`` nor a context mesh.
  """
  if not out_sharding:
    return value
  if isinstance(out_sharding, (jax.sharding.Sharding, Format)):
    concrete = (
      out_sharding.sharding
      if isinstance(out_sharding, Format)
      else out_sharding
    )
    _check_axis_types(getattr(concrete, 'mesh', None) if mesh is None else mesh)
    # A concrete sharding (e.g. a NamedSharding) or a Format (a layout and a
    # sharding) places the value itself.
    if isinstance(value, jax.core.Tracer):
      return jax.lax.with_sharding_constraint(value, out_sharding)
    return jax.device_put(value, out_sharding)
  spec = get_pspec(out_sharding, sharding_rules)
  target_mesh = meta.get_global_mesh() if mesh is None else mesh
  if target_mesh is None:
    raise ValueError(
      'An auto mesh context or metadata is required if creating a '
      f'variable with annotation out_sharding={spec}: call it under '
      '`jax.set_mesh(mesh)` or pass a mesh.'
    )
  _check_axis_types(target_mesh)
  if isinstance(value, jax.core.Tracer):
    return meta.apply_sharding_constraint(value, spec, mesh)
  # Outside tracing: place the array (a bare spec uses the context mesh).
  return jax.device_put(
    value, spec if mesh is None else NamedSharding(mesh, spec)
  )
