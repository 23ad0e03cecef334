"""Lifted JAX transforms for Linen Modules.

Each transform here wraps its counterpart in ``flax.core.lift`` (all built
on the one lifting primitive ``pack``). Applied to a Module class it
returns a subclass whose methods are transformed (``nn.vmap(MLP)`` is the
class ``VmapMLP``); applied to a function or method taking a Module first
it returns the transformed function.

>>> import jax, jax.numpy as jnp
>>> from flax import linen as nn
>>> class Scale(nn.Module):
...   @nn.compact
...   def __call__(self, x):
...     return x * self.param('s', jax.nn.initializers.ones, x.shape[-1:])
>>> Ensemble = nn.vmap(Scale, variable_axes={'params': 0},
...                    split_rngs={'params': True})
>>> v = Ensemble().init(jax.random.key(0), jnp.ones((4, 3)))
>>> v['params']['s'].shape
(4, 3)
"""

import dataclasses
import functools
from typing import Any, Callable, Mapping, Optional, Sequence

import jax.numpy as jnp

from flax.core import lift
from flax.core import meta
from flax.core.frozen_dict import FrozenDict
from flax import errors
from flax.linen import _jit_lifting
from flax.linen._jit_lifting import _HashableProxy as _HashableProxy  # noqa: F401
from flax.linen import _lifting
from flax.linen.module import Module
from flax.linen._lifting import decorator_lift_transform
from flax.linen._lifting import get_module_scopes  # noqa: F401
from flax.linen._lifting import lift_direct_transform
from flax.linen._lifting import lift_transform
from flax.linen._lifting import set_module_scopes  # noqa: F401
from flax.linen._lifting import (  # noqa: F401
  module_class_lift_transform as module_class_lift_transform,
)
from flax.linen._context import named_call as named_call  # noqa: F401
from flax.linen._method_wrapping import (  # noqa: F401
  wrap_method_once as wrap_method_once,
)
from flax.core.scope import LazyRng as LazyRng  # noqa: F401
from flax.linen._module_rngs import clean_clone as clean_clone  # noqa: F401
from flax.linen._module_rngs import fork_rngs as fork_rngs  # noqa: F401
from flax.core.scope import Scope as Scope  # noqa: F401
from flax.core.scope import Variable as Variable  # noqa: F401
from flax.ids import FlaxId as FlaxId  # noqa: F401

broadcast = lift.broadcast


def _picked(given, names):
  """The entries ``names`` of a transform's ``locals()``, by keyword."""
  return {name: given[name] for name in names}


# The arguments each transform hands on, by keyword, to the lifted one.
_VMAP_OPTIONS = (
  'methods',
  'in_axes',
  'out_axes',
  'axis_size',
  'axis_name',
  'spmd_axis_name',
  'metadata_params',
)
_JIT_OPTIONS = (
  'variables',
  'rngs',
  'static_argnums',
  'static_argnames',
  'donate_argnums',
  'device',
  'backend',
)
_CHECKPOINT_OPTIONS = (
  'variables',
  'rngs',
  'concrete',
  'static_argnums',
  'prevent_cse',
  'policy',
  'methods',
)
_SCAN_OPTIONS = (
  'variable_axes',
  'variable_broadcast',
  'variable_carry',
  'split_rngs',
  'in_axes',
  'out_axes',
  'length',
  'reverse',
  'unroll',
  '_split_transpose',
  'data_transform',
  'metadata_params',
  'methods',
  'check_constancy_invariants',
)
_MAP_VARIABLES_ORDER = (
  'mapped_collections',
  'trans_in_fn',
  'trans_out_fn',
  'init',
  'mutable',
  'rngs',
  'variables',
)


def vmap(
  target,
  variable_axes: Mapping = FrozenDict(),
  split_rngs: Mapping = FrozenDict(),
  in_axes=0,
  out_axes=0,
  axis_size: Optional[int] = None,
  axis_name: Optional[str] = None,
  spmd_axis_name: Optional[str] = None,
  metadata_params: Mapping[Any, Any] = {},
  methods=None,
):
  """Lifted ``jax.vmap`` of a Module class or a function ``fn(module, ...)``.

  Args:
    target: a Module class or a function taking a Module first.
    variable_axes: ``{collection: axis}``; ``None`` shares the variables
      across the mapped axis, an int stacks them along that axis.
    split_rngs: ``{stream: bool}``, whether each index gets its own keys
      (e.g. ``{'params': True}`` for independently initialized members).
    in_axes: as in ``jax.vmap``.
    out_axes: as in ``jax.vmap``.
    axis_size: the mapped size when no input carries the axis.
    axis_name: the axis name for collectives (``lax.pmean``...).
    spmd_axis_name: see ``jax.vmap``.
    metadata_params: passed to ``AxisMetadata.add_axis`` of boxed
      variables, e.g. ``{nn.PARTITION_NAME: 'ensemble'}``.
    methods: for a class, the methods to transform (default
      ``['__call__']``); a dict gives per-method overrides.

  Returns:
    The transformed class or function.
  """
  options = _picked(locals(), _VMAP_OPTIONS)
  return lift_transform(lift.vmap, target, variable_axes, split_rngs, **options)


def jit(
  target,
  variables=True,
  rngs=True,
  static_argnums=(),
  static_argnames=(),
  donate_argnums=(),
  device=None,
  backend=None,
  methods=None,
):
  """Lifted ``jax.jit`` of a Module class or a method.

  ``static_argnums`` counts the Module as argument 0. A jitted method is
  traced once per Module configuration (the class and field values, also
  of the Modules it holds), scope paths, mutable collections, and shapes
  and dtypes of the variables and inputs; PRNG keys are traced data.

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class Scale(nn.Module):
  ...   @nn.jit
  ...   @nn.compact
  ...   def __call__(self, x):
  ...     return x * self.param('s', jax.nn.initializers.ones, ())
  >>> v = Scale().init(jax.random.key(0), jnp.ones(2))
  >>> Scale().apply(v, jnp.arange(2.0)).tolist()
  [0.0, 1.0]
  """
  trafo_kwargs = _picked(locals(), _JIT_OPTIONS)
  if _lifting.is_module_class(target):
    return _jit_lifting.module_class_jit(
      target, methods=methods, **trafo_kwargs
    )
  partial = _lifting.partial_module_class(target)
  if partial is not None:
    return partial.rewrap(
      _jit_lifting.module_class_jit(
        partial.module_class, methods=methods, **trafo_kwargs
      )
    )
  if callable(target) and not isinstance(target, Module):
    if methods is not None:
      raise ValueError(
        'Methods should not be provided when transforming a function.'
      )
    return _jit_lifting.method_jit(target, **trafo_kwargs)
  raise errors.TransformTargetError(target)


def checkpoint(
  target,
  variables=True,
  rngs=True,
  concrete: bool = False,
  prevent_cse: bool = True,
  static_argnums=(),
  policy: Optional[Callable[..., bool]] = None,
  methods=None,
):
  """Lifted ``jax.checkpoint`` (rematerialization).

  Activations inside are recomputed on the backward pass instead of being
  stored. A transformed class is named ``Checkpoint<Name>``.
  ``static_argnums`` counts the Module (``self``) as argument 0.
  """
  options = _picked(locals(), _CHECKPOINT_OPTIONS)
  return lift_transform(lift.checkpoint, target, **options)


remat = checkpoint


def remat_scan(
  target,
  lengths: Sequence[int] = (),
  policy: Optional[Callable[..., bool]] = None,
  variable_broadcast=False,
  variable_carry=False,
  variable_axes: Mapping = FrozenDict({True: 0}),
  split_rngs: Mapping = FrozenDict({True: True}),
):
  """Applies ``target`` ``prod(lengths)`` times in nested remat'd scans.

  ``target.__call__(carry) -> carry``; variables get one leading axis per
  entry of ``lengths``.
  """
  return lift_transform(
    lift.remat_scan,
    target,
    lengths=lengths,
    policy=policy,
    variable_broadcast=variable_broadcast,
    variable_carry=variable_carry,
    variable_axes=variable_axes,
    split_rngs=split_rngs,
  )


def scan(
  target,
  variable_axes: Mapping = FrozenDict(),
  variable_broadcast=False,
  variable_carry=False,
  split_rngs: Mapping = FrozenDict(),
  in_axes=0,
  out_axes=0,
  length: Optional[int] = None,
  reverse: bool = False,
  unroll: int = 1,
  data_transform=None,
  metadata_params: Mapping[Any, Any] = {},
  methods=None,
  _split_transpose: bool = False,
  check_constancy_invariants: bool = True,
):
  """Lifted ``jax.lax.scan``.

  The target's method has the form ``f(module, carry, *xs) -> (carry,
  ys)``. Collections in ``variable_axes`` get one slice per iteration,
  ``variable_broadcast`` ones are shared (and initialized once), and
  ``variable_carry`` ones are carried from one iteration to the next.
  ``in_axes=nn.broadcast`` marks inputs passed unchanged to every step.
  ``_split_transpose`` goes to ``jax.lax.scan``;
  ``check_constancy_invariants=False`` skips the check that broadcast
  variables do not depend on the loop.
  """
  options = _picked(locals(), _SCAN_OPTIONS)
  return lift_transform(lift.scan, target, **options)


def _identity(x):
  return x


def map_variables(
  target,
  mapped_collections=True,
  trans_in_fn=_identity,
  trans_out_fn=_identity,
  init: bool = False,
  mutable: bool = False,
  rngs=True,
  variables=True,
  methods=None,
):
  """Maps collections on their way into (and out of) a Module.

  ``trans_in_fn`` sees the variables before the Module uses them;
  ``trans_out_fn`` maps changed or newly created ones back (only when
  ``init`` or ``mutable``).
  """
  is_class = _is_class(target) or _lifting.partial_module_class(target)
  if methods is not None and not is_class:
    raise ValueError(
      'Methods should not be provided when transforming a function.'
    )
  # lift.map_variables takes these positionally, in this order.
  given = locals()
  positional = [given[k] for k in _MAP_VARIABLES_ORDER]
  return lift_transform(
    lift.map_variables, target, *positional, methods=methods
  )


def fold_rngs(target, variables=True, rngs=True, methods=None):
  """Folds the static path of each PRNG stream into its key."""
  return lift_transform(
    lift.fold_rngs,
    target,
    variables=variables,
    rngs=rngs,
    methods=methods,
  )


def _is_class(target) -> bool:
  return isinstance(target, type)


def add_metadata_axis(
  target,
  variable_axes: Mapping = FrozenDict(),
  metadata_params: Mapping[Any, Any] = {},
):
  """Adds an axis to the metadata boxes of some collections.

  For a Module that is vmapped by hand: boxed variables seen inside have
  the axis removed, and get it back on the way out.
  """

  # One map_variables layer per collection, innermost first.
  return functools.reduce(
    lambda inner, col_axis: map_variables(
      inner,
      col_axis[0],
      trans_in_fn=_axis_edit(meta.remove_axis, col_axis[1], metadata_params),
      trans_out_fn=_axis_edit(meta.add_axis, col_axis[1], metadata_params),
      mutable=True,
    ),
    variable_axes.items(),
    target,
  )


def _axis_edit(edit, axis, metadata_params):
  """``tree -> edit(tree, axis, metadata_params)`` for the boxes of one
  collection (``edit`` is ``meta.add_axis`` or ``meta.remove_axis``)."""
  return functools.partial(edit, index=axis, params=metadata_params)


def jvp(
  fn, mdl, primals, tangents, variable_tangents, variables=True, rngs=True
):
  """Lifted ``jax.jvp`` of ``fn(mdl, *primals)``.

  ``variable_tangents`` is ``{collection: tangents}``; collections left out
  get zero tangents. Returns ``(primals_out, tangents_out)``.
  """

  def transform(core_fn, scope, primals, tangents, variable_tangents):
    return lift.jvp(
      core_fn,
      scope,
      primals,
      tangents,
      variable_tangents,
      variables=variables,
      rngs=rngs,
    )

  operands = (primals, tangents, variable_tangents)
  return lift_direct_transform(
    transform, (fn,), mdl, *operands, multi_scope=False, name='jvp'
  )


def vjp(
  fn,
  mdl,
  *primals,
  has_aux: bool = False,
  reduce_axes=(),
  vjp_variables='params',
  variables=True,
  rngs=True,
  multi_scope: bool = False,
):
  """Lifted ``jax.vjp`` of ``fn(mdl, *primals)``.

  Returns ``(out, vjp_fn)`` (or ``(out, vjp_fn, aux)``); ``vjp_fn(ct)``
  gives ``(variable_grads, *input_grads)``.
  """

  def transform(core_fn, scope, *primals):
    return lift.vjp(
      core_fn,
      scope,
      *primals,
      has_aux=has_aux,
      reduce_axes=reduce_axes,
      vjp_variables=vjp_variables,
      variables=variables,
      rngs=rngs,
    )

  return lift_direct_transform(
    transform, (fn,), mdl, *primals, multi_scope=multi_scope, name='vjp'
  )


def value_and_grad(
  fn,
  mdl,
  *primals,
  has_aux: bool = False,
  reduce_axes=(),
  variables=True,
  rngs=True,
):
  """A limited, lifted ``jax.value_and_grad`` of ``fn(mdl, *primals)``.

  Gradients are taken with respect to the inputs ``primals`` only, not the
  Module's variables (use ``nn.vjp`` for those). ``fn`` must return a
  scalar (or ``(scalar, aux)`` with ``has_aux``).

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class Scale(nn.Module):
  ...   @nn.compact
  ...   def __call__(self, x, y):
  ...     return self.param('s', jax.nn.initializers.ones, ()) * x * y
  >>> class Foo(nn.Module):
  ...   @nn.compact
  ...   def __call__(self, x, y):
  ...     z, (x_grad, y_grad) = nn.value_and_grad(
  ...         lambda mdl, x, y: mdl(x, y), Scale(), x, y)
  ...     return z, x_grad, y_grad
  >>> v = Foo().init(jax.random.key(0), 2.0, 3.0)
  >>> [float(a) for a in Foo().apply(v, 2.0, 3.0)]
  [6.0, 3.0, 2.0]

  Returns:
    ``(out, grads)``, or ``((out, aux), grads)`` with ``has_aux``, where
    ``grads`` is a tuple holding the gradient of each primal, in order.

  Raises:
    ValueError: if ``fn``'s output is not a scalar.
  """
  result = vjp(
    fn,
    mdl,
    *primals,
    has_aux=has_aux,
    reduce_axes=reduce_axes,
    vjp_variables=False,
    variables=variables,
    rngs=rngs,
    multi_scope=True,
  )
  if has_aux:
    out, vjp_fn, aux = result
  else:
    (out, vjp_fn), aux = result, None
  if jnp.shape(out) != ():
    raise ValueError(
      'grad can only work on functions with scalar-valued outputs. '
      f'out shape={jnp.shape(out)}'
    )
  _, *argument_grads = vjp_fn(jnp.ones_like(out))
  argument_grads = tuple(argument_grads)
  if has_aux:
    return (out, aux), argument_grads
  return out, argument_grads


def grad(
  fn,
  mdl,
  *primals,
  has_aux: bool = False,
  reduce_axes=(),
  variables=True,
  rngs=True,
):
  """A limited, lifted ``jax.grad`` of scalar ``fn(mdl, *primals)``.

  Like :func:`value_and_grad` without the value: gradients with respect to
  the inputs only.

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class Square(nn.Module):
  ...   @nn.compact
  ...   def __call__(self, x):
  ...     (x_grad,) = nn.grad(lambda mdl, x: x * x, self, x)
  ...     return x_grad
  >>> float(Square().apply({}, 3.0))
  6.0

  Returns:
    ``grads`` (a list with the gradient of each primal), or
    ``(grads, aux)`` with ``has_aux``.
  """
  value, argument_grads = value_and_grad(
    fn,
    mdl,
    *primals,
    has_aux=has_aux,
    reduce_axes=reduce_axes,
    variables=variables,
    rngs=rngs,
  )
  if has_aux:
    return argument_grads, value[1]
  return argument_grads


def custom_vjp(
  fn, forward_fn, backward_fn, grad_vars='params', nondiff_argnums=()
):
  """Lifted ``jax.custom_vjp``.

  Args:
    fn: ``fn(mdl, *args) -> out``.
    forward_fn: ``forward_fn(mdl, *args) -> (out, residuals)``.
    backward_fn: ``backward_fn(residuals, out_ct) -> (variable_cts,
      *input_cts)``; it gets no Module.
    grad_vars: the collections that receive cotangents.
    nondiff_argnums: arguments that are not differentiated (``mdl`` is 0).

  Returns:
    A function ``(mdl, *args) -> out``.
  """

  def transform(core_fn, core_fwd):
    return lift.custom_vjp(
      core_fn,
      core_fwd,
      backward_fn,
      grad_vars=grad_vars,
      nondiff_argnums=nondiff_argnums,
    )

  return decorator_lift_transform(
    transform, (fn, forward_fn), multi_scope=False
  )


def while_loop(
  cond_fn,
  body_fn,
  mdl,
  init,
  carry_variables=False,
  broadcast_variables=True,
  split_rngs: Mapping = FrozenDict(),
):
  """Lifted ``jax.lax.while_loop``.

  ``cond_fn(mdl, carry) -> bool`` and ``body_fn(mdl, carry) -> carry``.
  ``broadcast_variables`` are read-only inside; ``carry_variables`` may be
  updated (with fixed shapes). Variables cannot be created in the loop.
  """

  def transform(core_cond, core_body, scopes, init):
    return lift.while_loop(
      core_cond,
      core_body,
      scopes,
      init,
      carry_variables=carry_variables,
      broadcast_variables=broadcast_variables,
      split_rngs=split_rngs,
    )

  return lift_direct_transform(
    transform, (cond_fn, body_fn), mdl, init, name='while_loop'
  )


def cond(pred, true_fun, false_fun, mdl, *operands, variables=True, rngs=True):
  """Lifted ``jax.lax.cond``: branches are ``fun(mdl, *operands)``.

  Both branches must create and update the same variables.
  """

  def transform(core_true, core_false, scopes, *operands):
    return lift.cond(
      pred,
      core_true,
      core_false,
      scopes,
      *operands,
      variables=variables,
      rngs=rngs,
    )

  return lift_direct_transform(
    transform, (true_fun, false_fun), mdl, *operands, name='cond'
  )


def switch(index, branches, mdl, *operands, variables=True, rngs=True):
  """Lifted ``jax.lax.switch``: branches are ``fun(mdl, *operands)``.

  All branches must create and update the same variables; when they
  differ, run every branch once at init time.
  """

  def transform(*args):
    n = len(branches)
    core_branches, (scopes, *operands) = args[:n], args[n:]
    return lift.switch(
      index,
      list(core_branches),
      scopes,
      *operands,
      variables=variables,
      rngs=rngs,
    )

  return lift_direct_transform(
    transform, tuple(branches), mdl, *operands, name='switch'
  )


__all__ = [
  'add_metadata_axis',
  'broadcast',
  'checkpoint',
  'cond',
  'custom_vjp',
  'fold_rngs',
  'grad',
  'jit',
  'jvp',
  'map_variables',
  'remat',
  'remat_scan',
  'scan',
  'switch',
  'value_and_grad',
  'vjp',
  'vmap',
  'while_loop',
]


@dataclasses.dataclass(frozen=True)
class InstancePlaceholder:
  """Stands for a Module instance (its class, fields and id) in a cache key.

  Attributes:
    cls: the Module class.
    attrs: its field values.
    id: the instance's id.
  """

  cls: type
  attrs: dict
  id: int

  def replace(self, **changes) -> 'InstancePlaceholder':
    """Returns a copy with some fields changed."""
    return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class VariablePlaceholder:
  """Stands for a Variable (where it lives and its id) in a cache key."""

  collection: str
  name: str
  unbox: bool
  id: int

  def replace(self, **changes) -> 'VariablePlaceholder':
    """Returns a copy with some fields changed."""
    return dataclasses.replace(self, **changes)


_CACHE: dict = {}


def _cache_key(*parts):
  try:
    key = parts
    hash(key)
    return key
  except TypeError:
    return None


def _cached(key, make):
  if key is None:
    return make()
  value = _CACHE.get(key)
  if value is None:
    value = _CACHE[key] = make()
  return value


def module_class_lift_transform_cached(
  transform, module_class, methods=None, **trafo_kwargs
):
  """``module_class_lift_transform`` that returns the same class when
  called again with the same (hashable) arguments."""
  key = _cache_key(
    'class',
    transform,
    module_class,
    _freeze_methods(methods),
    _items(trafo_kwargs),
  )
  return _cached(
    key,
    lambda: _lifting.module_class_lift_transform(
      transform, module_class, methods=methods, **trafo_kwargs
    ),
  )


def decorator_lift_transform_cached(transform, class_fn, **trafo_kwargs):
  """``decorator_lift_transform`` that returns the same function when
  called again with the same (hashable) arguments."""
  key = _cache_key('fn', transform, class_fn, _items(trafo_kwargs))
  return _cached(
    key,
    lambda: decorator_lift_transform(transform, class_fn, **trafo_kwargs),
  )


def lift_transform_cached(
  transform, target, *trafo_args, methods=None, **trafo_kwargs
):
  """``lift_transform`` with the result cached for hashable arguments."""
  if trafo_args:
    raise TypeError(
      'lift_transform_cached takes the transform arguments by keyword only.'
    )
  if _lifting.is_module_class(target):
    return module_class_lift_transform_cached(
      transform, target, methods=methods, **trafo_kwargs
    )
  partial = _lifting.partial_module_class(target)
  if partial is not None:
    return partial.rewrap(
      module_class_lift_transform_cached(
        transform, partial.module_class, methods=methods, **trafo_kwargs
      )
    )
  if callable(target) and not isinstance(target, Module):
    if methods is not None:
      raise ValueError(
        'Methods should not be provided when transforming a function.'
      )
    return decorator_lift_transform_cached(transform, target, **trafo_kwargs)
  raise errors.TransformTargetError(target)


def _items(kwargs):
  return tuple(sorted(kwargs.items()))


def _freeze_methods(methods):
  if isinstance(methods, dict):
    return tuple(sorted((k, _items(dict(v or {}))) for k, v in methods.items()))
  if isinstance(methods, list):
    return tuple(methods)
  return methods
