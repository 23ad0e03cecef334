"""Logical partitioning for Linen Modules (``flax.linen.partitioning``).

T5X-style models declare parameters with the logical names of their axes
(:func:`param_with_axes`). The names are kept beside the values, in the
collection ``'params_axes'`` (``'<collection>_axes'`` in general), as
:class:`AxisMetadata` under ``'<name>_axes'``. :func:`get_axis_names` turns
that collection into ``PartitionSpec`` trees, and the logical axis rules
(:func:`axis_rules`) map them to mesh axes. :func:`scan_with_axes` and
:func:`vmap_with_axes` add the name of the new axis to the metadata.

This module needs ``flax-linen`` (install ``flax-spmd[linen]``).

>>> import jax, jax.numpy as jnp
>>> from flax import linen as nn
>>> from flax.linen import partitioning as nnp
>>> class Dense(nn.Module):
...   @nn.compact
...   def __call__(self, x):
...     kernel = nnp.param_with_axes('kernel', jax.nn.initializers.ones,
...                                  (x.shape[-1], 3), axes=('embed', 'mlp'))
...     return x @ kernel
>>> variables = Dense().init(jax.random.key(0), jnp.ones((1, 2)))
>>> variables['params_axes']
{'kernel_axes': AxisMetadata(names=('embed', 'mlp'))}
>>> nnp.get_axis_names(variables['params_axes'])['kernel']
P('embed', 'mlp')
"""

import functools
import re
from collections.abc import Mapping
from typing import Any

import jax
from jax.sharding import PartitionSpec

from flax import linen as nn
from flax import struct
from flax.core import lift
from flax.core import spmd as core_spmd
from flax.core.frozen_dict import freeze
from flax.core.frozen_dict import unfreeze
from flax.core.scope import Variable
from flax.linen import module as linen_module
from flax.linen import transforms as linen_transforms
from flax.spmd import RulesFallback
from flax.spmd import _with_sharding_constraint as _with_sharding_constraint
from flax.spmd import logical_to_mesh
from flax.spmd import logical_to_mesh_axes
from flax.spmd import with_logical_constraint
from flax.traverse_util import flatten_dict
from flax.traverse_util import unflatten_dict
from flax.typing import In as ScanIn
from flax.typing import Out as ScanOut

__all__ = [
  'AxisMetadata',
  'PartitionedVariable',
  'RulesFallback',
  'ScanIn',
  'ScanOut',
  'axis_rules',
  'core_remat_static',
  'flatten_dict',
  'freeze',
  'get_axis_names',
  'get_axis_rules',
  'logical_to_mesh',
  'logical_to_mesh_axes',
  'param_with_axes',
  'remat',
  'scan_with_axes',
  'set_axis_rules',
  'unflatten_dict',
  'unfreeze',
  'variable_with_axes',
  'vmap_with_axes',
  'with_sharding_constraint',
]

# Flax's names for the logical axis rules API.
axis_rules = core_spmd.logical_axis_rules
set_axis_rules = core_spmd.set_logical_axis_rules
get_axis_rules = core_spmd.get_logical_axis_rules
with_sharding_constraint = with_logical_constraint

_AXES_SUFFIX = re.compile(r'_axes$')


class AxisMetadata(struct.PyTreeNode):
  """The logical axis names of one variable (a pytree without leaves).

  Attributes:
    names: one logical name (or None) per axis of the variable.
  """

  names: Any = struct.field(pytree_node=False)


def _is_axis_metadata(x) -> bool:
  return isinstance(x, AxisMetadata)


def _current_module(module):
  if module is None:
    module = linen_module.context.module_stack[-1]
  assert module is not None, 'Call this inside a Linen Module method.'
  return module


def _record_axes(module, collection: str, name: str, axes) -> None:
  """Stores ``AxisMetadata(axes)`` when ``<collection>_axes`` is mutable."""
  axes_collection = f'{collection}_axes'
  if module.is_mutable_collection(axes_collection):
    module.variable(axes_collection, f'{name}_axes', AxisMetadata, axes)


def param_with_axes(
  name: str,
  init_fn,
  *init_args,
  axes: tuple[str, ...] | None = None,
  module: nn.Module | None = None,
  **init_kwargs,
):
  """Declares a parameter and records the logical names of its axes.

  Works like ``Module.param`` on ``module`` (by default the Module whose
  method is running). The names go to ``params_axes`` as
  ``AxisMetadata`` under ``'<name>_axes'`` when that collection is
  mutable (e.g. during ``init``).

  Args:
    name: the parameter's name.
    init_fn: its initializer, ``init_fn(key, *init_args, **init_kwargs)``.
    *init_args: positional arguments of ``init_fn``.
    axes: the logical name of each axis, or None to record none.
    module: the Module to declare it on.
    **init_kwargs: keyword arguments of ``init_fn``.

  Returns:
    The parameter's value.
  """
  module = _current_module(module)
  value = module.param(name, init_fn, *init_args, **init_kwargs)
  if axes is not None:
    _record_axes(module, 'params', name, axes)
    value = with_sharding_constraint(value, axes)
  return value


_LogicalAxes = tuple[str, ...] | None


class PartitionedVariable(Variable):
  """A Variable whose value is sharding-constrained by logical axis names.

  Reading or writing ``.value`` applies ``with_sharding_constraint`` with
  ``axes`` (when given) and ``fallback``.
  """

  def __init__(
    self,
    scope,
    collection: str,
    name: str,
    axes: _LogicalAxes = None,
    fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
  ):
    super().__init__(scope, collection, name, True)
    self.axes = axes
    self.fallback = fallback

  def _constrain(self, value):
    if self.axes is None:
      return value
    return with_sharding_constraint(value, self.axes, fallback=self.fallback)

  @property
  def value(self):
    """The value, constrained to its logical sharding."""
    return self._constrain(Variable.value.fget(self))

  @value.setter
  def value(self, value):
    Variable.value.fset(self, self._constrain(value))


def _constrained_init(init_fn, axes, fallback):
  """``init_fn`` whose value is constrained to the logical ``axes``."""

  @functools.wraps(init_fn)
  def init(*args, **kwargs):
    return with_sharding_constraint(
      init_fn(*args, **kwargs), axes, fallback=fallback
    )

  return init


def variable_with_axes(
  collection: str,
  name: str,
  init_fn,
  *init_args,
  axes: tuple[str, ...] | None = None,
  module: nn.Module | None = None,
  fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
  **init_kwargs,
) -> PartitionedVariable:
  """Declares a variable and records the logical names of its axes.

  Works like ``Module.variable``; the names go to ``<collection>_axes``
  as for :func:`param_with_axes`.

  Returns:
    A :class:`PartitionedVariable` for it.
  """
  module = _current_module(module)
  if axes is not None:
    init_fn = _constrained_init(init_fn, axes, fallback)
  module.variable(collection, name, init_fn, *init_args, **init_kwargs)
  if axes is not None:
    _record_axes(module, collection, name, axes)
  return PartitionedVariable(
    module.scope, collection, name, axes=axes, fallback=fallback
  )


def get_axis_names(axes_metadata):
  """Turns an ``*_axes`` collection into a tree of ``PartitionSpec``.

  The ``'_axes'`` suffix of each name is dropped, so the result has the
  structure of the variables themselves.

  >>> from flax.linen import partitioning as nnp
  >>> nnp.get_axis_names({'kernel_axes': nnp.AxisMetadata(('embed', 'mlp'))})
  FrozenDict({
      kernel: P('embed', 'mlp'),
  })
  """
  flat = flatten_dict(unfreeze(axes_metadata))
  specs = {
    path[:-1] + (_AXES_SUFFIX.sub('', path[-1]),): _names_to_specs(meta.names)
    for path, meta in flat.items()
  }
  return freeze(unflatten_dict(specs))


def _is_names_leaf(names):
  return isinstance(names, tuple) and all(
    n is None or n is PartitionSpec.UNCONSTRAINED or isinstance(n, str)
    for n in names
  )


def _names_to_specs(names):
  # A pytree-valued variable carries a pytree of axis names: one
  # ``PartitionSpec`` per tuple of names (or per single name).
  return jax.tree_util.tree_map(
    lambda n: PartitionSpec(*n), names, is_leaf=_is_names_leaf
  )


def _edit_names(tree, edit):
  return jax.tree_util.tree_map(
    lambda m: m.replace(names=edit(tuple(m.names))),
    tree,
    is_leaf=_is_axis_metadata,
  )


def _insert_name(names, pos, name):
  return names[:pos] + (name,) + names[pos:]


def _remove_name(names, pos):
  return names[:pos] + names[pos + 1 :]


def _add_axis_to_metadata(target, axis_pos, axis_name, axes_collection):
  """Wraps ``target`` so ``axes_collection`` names gain ``axis_name``."""
  return nn.map_variables(
    target,
    axes_collection,
    trans_in_fn=lambda tree: _edit_names(
      tree, lambda names: _remove_name(names, axis_pos)
    ),
    trans_out_fn=lambda tree: _edit_names(
      tree, lambda names: _insert_name(names, axis_pos, axis_name)
    ),
    mutable=True,
  )


def _plain_axis(axis):
  return getattr(axis, 'axis', axis)


_AxesByCollection = Mapping[Any, Any]
_SplitRngs = Mapping[Any, bool]
_Collections = tuple[str, ...]
_OptInt = int | None
_OptName = str | None

# Arguments the wrappers below hand on unchanged to the transform they wrap.
_SCAN_FORWARDED = (
  'variable_broadcast',
  'variable_carry',
  'split_rngs',
  'in_axes',
  'out_axes',
  'length',
  'reverse',
  'unroll',
  'data_transform',
  'methods',
)
_VMAP_FORWARDED = (
  'split_rngs',
  'in_axes',
  'out_axes',
  'axis_size',
  'axis_name',
  'spmd_axis_name',
  'methods',
)
_CHECKPOINT_FORWARDED = (
  'variables',
  'rngs',
  'concrete',
  'prevent_cse',
  'policy',
)


def _forwarded(args, names):
  """The entries ``names`` of a wrapper's ``locals()``."""
  return {name: args[name] for name in names}


def scan_with_axes(
  target,
  variable_axes: _AxesByCollection = {},
  variable_broadcast=False,
  variable_carry=False,
  split_rngs: _SplitRngs = {},
  in_axes=0,
  out_axes=0,
  length: _OptInt = None,
  reverse: bool = False,
  unroll: int = 1,
  axis_name: str = 'layers',
  axes_collections: _Collections = ('params',),
  data_transform=None,
  methods=None,
):
  """``nn.scan`` that adds ``axis_name`` to the axis names of its variables.

  For every collection in ``axes_collections`` that is scanned (in
  ``variable_axes``), the names recorded by :func:`param_with_axes` /
  :func:`variable_with_axes` get ``axis_name`` at the scanned axis.
  Other arguments are those of ``nn.scan``.
  """
  forwarded = _forwarded(locals(), _SCAN_FORWARDED)
  scanned = [col for col in axes_collections if col in variable_axes]
  # Each scanned collection's axis-name metadata is scanned along with it.
  variable_axes = {
    **variable_axes,
    **{f'{col}_axes': variable_axes[col] for col in scanned},
  }
  transformed = nn.scan(target, variable_axes=variable_axes, **forwarded)
  for col in scanned:
    transformed = _add_axis_to_metadata(
      transformed, _plain_axis(variable_axes[col]), axis_name, f'{col}_axes'
    )
  return transformed


def vmap_with_axes(
  target,
  variable_axes: _AxesByCollection,
  split_rngs: _SplitRngs = {},
  in_axes=0,
  out_axes=0,
  axis_size: _OptInt = None,
  axis_name: _OptName = None,
  partitioning_axis_names: Mapping[Any, str] = {},
  spmd_axis_name: _OptName = None,
  methods=None,
):
  """``nn.vmap`` that adds axis names to the axis names of its variables.

  For every collection ``col`` in ``partitioning_axis_names``, the names
  recorded in ``<col>_axes`` get ``partitioning_axis_names[col]`` at the
  mapped axis ``variable_axes[col]``. Other arguments are those of
  ``nn.vmap``.
  """
  forwarded = _forwarded(locals(), _VMAP_FORWARDED)
  variable_axes = {
    **variable_axes,
    **{f'{col}_axes': variable_axes[col] for col in partitioning_axis_names},
  }
  transformed = nn.vmap(target, variable_axes=variable_axes, **forwarded)
  for col, name in partitioning_axis_names.items():
    transformed = _add_axis_to_metadata(
      transformed, _plain_axis(variable_axes[col]), name, f'{col}_axes'
    )
  return transformed


def core_remat_static(
  fn,
  variables=True,
  rngs=True,
  concrete: bool = False,
  prevent_cse=True,
  static_argnums: tuple[int, ...] = (),
  policy=None,
):
  """``lift.remat`` whose ``static_argnums`` arguments stay Python values.

  ``static_argnums`` count the arguments after the scope (0 is the first).
  Those arguments are closed over instead of traced, so they can steer
  Python control flow; the others are traced by ``jax.checkpoint``.
  """
  checkpoint_options = _forwarded(locals(), _CHECKPOINT_FORWARDED)
  static_argnums = tuple(sorted(static_argnums))

  @functools.wraps(fn)
  def wrapper(scope, *args, **kwargs):
    static = {i: args[i] for i in static_argnums if i < len(args)}
    dynamic = tuple(a for i, a in enumerate(args) if i not in static)

    def merged(scope, *dynamic_args, **kwargs):
      it = iter(dynamic_args)
      full = [
        static[i] if i in static else next(it)
        for i in range(len(dynamic_args) + len(static))
      ]
      return fn(scope, *full, **kwargs)

    return lift.checkpoint(merged, **checkpoint_options)(
      scope, *dynamic, **kwargs
    )

  return wrapper


def remat(
  target,
  variables=True,
  rngs=True,
  concrete: bool = False,
  prevent_cse=True,
  static_argnums: tuple[int, ...] = (),
  policy=None,
  methods=None,
):
  """``nn.remat`` whose ``static_argnums`` stay Python values.

  ``static_argnums`` count the method's arguments after ``self`` (0 is
  the first). The transformed class is named ``Core_remat_static<Name>``.
  """
  options = _forwarded(locals(), (*_CHECKPOINT_FORWARDED, 'static_argnums'))
  return linen_transforms.lift_transform(
    core_remat_static, target, methods=methods, **options
  )
