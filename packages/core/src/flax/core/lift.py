"""Lifted JAX transforms: JAX transforms of functions of Flax scopes.

Every transform here is built on the single lifting primitive
:func:`pack`. A lifted function takes a scope (or a pytree of scopes) as
its first argument; variables and PRNG streams are handed through the JAX
transform by collection, as the ``variable_*`` and ``split_rngs`` filters
say.

>>> import jax, jax.numpy as jnp
>>> from flax.core import init, lift
>>> def dense(scope, x):
...   w = scope.param('w', jax.nn.initializers.normal(), (x.shape[-1], 2))
...   return x @ w
>>> ensemble = lift.vmap(dense, variable_axes={'params': 0},
...                      split_rngs={'params': True}, in_axes=0)
>>> y, variables = init(ensemble)(jax.random.key(0), jnp.ones((4, 3)))
>>> variables['params']['w'].shape
(4, 3, 2)
"""

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional

import jax

from flax.core import axes_scan
from flax.core._lift_jit import forked_rng_groups, jit, write_back_counters
from flax.core._filters import (
  CollectionFilter,
  PRNGSequenceFilter,
  intersect_filters,
  subtract_filters,
)
from flax.core._lift_loops import cond, scan, switch, while_loop
from flax.core._pack import (
  _unzip2,
  axis_subtrees,
  mapped_size,
  pack,
  split_in_out_axes,
)
from flax.core._rng import tree_map_rngs
from flax.core.scope import Scope

# Names Flax's lift module also offers.
from flax.core._filters import DenyList as DenyList  # noqa: E402
from flax.core._filters import group_collections as group_collections  # noqa: E402
from flax.core._filters import in_filter as in_filter  # noqa: E402
from flax.core._filters import is_filter_empty as is_filter_empty  # noqa: E402
from flax.core._filters import union_filters as union_filters  # noqa: E402
from flax.core._lift_helpers import CountsHolder as CountsHolder  # noqa: E402
from flax.core._lift_helpers import TransformContext as TransformContext  # noqa: E402
from flax.core._lift_helpers import id_fn as id_fn  # noqa: E402
from flax.core._lift_helpers import set_from_dict as set_from_dict  # noqa: E402
from flax.core._lift_helpers import swap_collection as swap_collection  # noqa: E402
from flax.core._lift_helpers import value_and_grad as value_and_grad  # noqa: E402
from flax.core._rng import LazyRng as LazyRng  # noqa: E402
from flax.core.frozen_dict import freeze as freeze  # noqa: E402
from flax.core.frozen_dict import unfreeze as unfreeze  # noqa: E402
from flax.typing import In as In  # noqa: E402
from flax.typing import Out as Out  # noqa: E402

__all__ = [
  'pack',
  'vmap',
  'scan',
  'jit',
  'remat',
  'checkpoint',
  'remat_scan',
  'jvp',
  'vjp',
  'custom_vjp',
  'while_loop',
  'cond',
  'switch',
  'map_variables',
  'fold_rngs',
  'broadcast',
]

broadcast = axes_scan.broadcast
_ = (cond, jit, scan, switch, while_loop)  # re-exported


def _meta():
  from flax.core import meta

  return meta


def vmap(
  fn: Callable[..., Any],
  variable_axes: Mapping[CollectionFilter, Optional[int]],
  split_rngs: Mapping[PRNGSequenceFilter, bool],
  in_axes=0,
  out_axes=0,
  axis_size: Optional[int] = None,
  axis_name: Optional[str] = None,
  spmd_axis_name: Optional[str] = None,
  metadata_params: Mapping[Any, Any] = {},
) -> Callable[..., Any]:
  """Lifted ``jax.vmap``.

  Args:
    fn: ``fn(scope, *args)`` to vectorize.
    variable_axes: collection filter -> axis of those variables (None to
      share them across the mapped axis).
    split_rngs: stream filter -> whether each index gets its own keys.
    in_axes: like ``jax.vmap``'s, for ``args``.
    out_axes: like ``jax.vmap``'s, for the output.
    axis_size: the mapped size, needed when no input has the axis.
    axis_name: name of the mapped axis for collectives.
    spmd_axis_name: see ``jax.vmap``.
    metadata_params: passed to ``AxisMetadata.add_axis``/``remove_axis``.

  Returns:
    The lifted function ``(scope, *args) -> y``.
  """
  axis_options = dict(
    axis_size=axis_size, axis_name=axis_name, spmd_axis_name=spmd_axis_name
  )
  in_groups, out_groups, variable_in_axes = split_in_out_axes(variable_axes)
  rng_groups, rng_splits = _unzip2(split_rngs.items())
  rng_axes = tuple(0 if split else None for split in rng_splits)

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
    meta = _meta()
    # Boxes leave the mapped axis first; the size is read from what vmap
    # receives.
    variable_groups = _per_axis(
      meta.remove_axis, variable_groups, variable_in_axes, metadata_params
    )
    size = mapped_size(
      (
        jax.numpy.shape(leaf)[axis]
        for axis, tree in axis_subtrees(
          (variable_in_axes, in_axes),
          (variable_groups, args),
          lambda a: a is None,
        )
        if axis is not None
        for leaf in jax.tree_util.tree_leaves(tree)
      ),
      axis_size,
      'Inconsistent batch axis sizes: {}',
      'axis_size should be specified manually.',
    )

    def split_fn(rng):
      return jax.random.split(rng, size)

    rng_groups = tuple(
      tree_map_rngs(split_fn, group) if split else group
      for group, split in zip(rng_groups, rng_splits)
    )

    def per_index(variable_groups, rng_groups, args):
      scope = scope_fn(variable_groups, rng_groups)
      return fn(scope, *args), repack_fn(scope)

    mapped = jax.vmap(
      per_index,
      in_axes=(variable_in_axes, rng_axes, in_axes),
      out_axes=(out_axes, variable_in_axes),
      **axis_options,
    )
    y, vars_out = mapped(variable_groups, rng_groups, args)
    return y, _per_axis(
      meta.add_axis, vars_out, variable_in_axes, metadata_params
    )

  return pack(inner, in_groups, out_groups, rng_groups, name='vmap')


_Fn = Callable[..., Any]


def _per_axis(op, groups, axes, params):
  """``op(group, axis, params)`` for each group with an axis (None: as is)."""
  return tuple(
    group if axis is None else op(group, axis, params)
    for group, axis in zip(groups, axes)
  )


def _pack_same(inner, variables, rngs, name, **kwargs):
  """``pack`` with one variable group (in and out) and one rng group."""
  return pack(inner, (variables,), (variables,), (rngs,), name=name, **kwargs)


def checkpoint(
  fn: _Fn,
  variables: CollectionFilter = True,
  rngs: PRNGSequenceFilter = True,
  concrete: bool = False,
  prevent_cse: bool = True,
  static_argnums: int | Iterable[int] = (),
  policy: Optional[Callable[..., bool]] = None,
) -> Callable[..., Any]:
  """Lifted ``jax.checkpoint`` (rematerialization).

  ``static_argnums`` counts the scope as argument 0. ``concrete=True``
  (value-dependent Python control flow) is not supported by current JAX;
  use ``static_argnums`` instead.
  """
  if concrete:
    raise ValueError(
      'concrete=True is no longer supported by jax.checkpoint; mark the '
      'arguments that drive Python control flow with static_argnums.'
    )
  if not isinstance(static_argnums, Iterable):
    static_argnums = (static_argnums,)
  remat_static = tuple(i + 1 for i in static_argnums if i > 0)

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
    def body(variable_groups, rng_groups, *args, **kwargs):
      scope = scope_fn(variable_groups, rng_groups)
      return fn(scope, *args, **kwargs), repack_fn(scope)

    rematted = jax.checkpoint(body, static_argnums=remat_static, **options)
    return rematted(variable_groups, rng_groups, *args, **kwargs)

  options = dict(prevent_cse=prevent_cse, policy=policy)
  return _pack_same(inner, variables, rngs, 'remat', enable_kwargs=True)


remat = checkpoint


def jvp(
  fn: Callable[..., Any],
  scope: Scope,
  primals: tuple,
  tangents: tuple,
  variable_tangents: Any,
  variables: CollectionFilter = True,
  rngs: PRNGSequenceFilter = True,
):
  """Lifted ``jax.jvp``: returns ``(y, y_tangent)``.

  Args:
    fn: ``fn(scope, *primals)``.
    scope: the scope (or pytree of scopes) to lift.
    primals: the inputs.
    tangents: the tangents of the inputs.
    variable_tangents: ``{collection: tangents}`` per scope; collections
      left out have zero tangent.
    variables: the collections made available inside.
    rngs: the PRNG streams made available inside.
  """

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
    jvp_variables, other_variables = variable_groups

    def wrapper(vars_primal, args):
      scope = scope_fn((vars_primal, other_variables), rng_groups)
      y = fn(scope, *args)
      return y, repack_fn(scope)

    (y, out_vars), out_tangents = jax.jvp(
      wrapper, (jvp_variables, args), (variable_tangents, tangents)
    )
    return (y, out_tangents[0]), out_vars

  treedef = jax.tree_util.tree_structure(
    scope, is_leaf=lambda x: isinstance(x, Scope)
  )
  variable_tangents = tuple(
    {k: v for k, v in vt.items() if v}
    for vt in treedef.flatten_up_to(variable_tangents)
  )
  target = tuple(variable_tangents[0].keys()) if variable_tangents else ()
  return pack(inner, (target, variables), (variables,), (rngs,), name='jvp')(
    scope, *primals
  )


def _bwd_wrapper(treedef, bwd_fn, tangent):
  vars_grad, *inputs_grad = bwd_fn(tangent)
  if treedef.num_leaves != len(vars_grad):
    # Scopes nested in one another share their root's variables: one
    # gradient per root scope.
    return (tuple(vars_grad), *inputs_grad)
  return (treedef.unflatten(vars_grad), *inputs_grad)


def vjp(
  fn: _Fn,
  scope: Scope,
  *primals,
  has_aux: bool = False,
  reduce_axes: tuple = (),
  vjp_variables: CollectionFilter = 'params',
  variables: CollectionFilter = True,
  rngs: PRNGSequenceFilter = True,
):
  """Lifted ``jax.vjp``.

  Returns ``(y, vjp_fn)`` (``(y, vjp_fn, aux)`` with ``has_aux``) where
  ``vjp_fn(ct)`` returns ``(variable_grads, *input_grads)``.
  """
  if reduce_axes:
    raise ValueError('reduce_axes is no longer supported by jax.vjp.')

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
    vjp_vars, other_vars = variable_groups

    def wrapper(vjp_vars, *args):
      scope = scope_fn((vjp_vars, other_vars), rng_groups)
      if has_aux:
        y, aux = fn(scope, *args)
      else:
        y, aux = fn(scope, *args), ()
      return y, (aux, repack_fn(scope))

    y, bwd, (aux, out_vars) = jax.vjp(wrapper, vjp_vars, *args, has_aux=True)
    treedef = jax.tree_util.tree_structure(
      scope, is_leaf=lambda x: isinstance(x, Scope)
    )
    bwd = jax.tree_util.Partial(functools.partial(_bwd_wrapper, treedef), bwd)
    if has_aux:
      return (y, bwd, aux), out_vars
    return (y, bwd), out_vars

  return pack(
    inner, (vjp_variables, variables), (variables,), (rngs,), name='vjp'
  )(scope, *primals)


def custom_vjp(
  fn: _Fn,
  forward_fn: _Fn,
  backward_fn: _Fn,
  grad_vars: CollectionFilter = 'params',
  nondiff_argnums: tuple = (),
) -> Callable[..., Any]:
  """Lifted ``jax.custom_vjp``.

  Args:
    fn: ``fn(scope, *args) -> y``, the primal function.
    forward_fn: ``forward_fn(scope, *args) -> (y, residuals)``.
    backward_fn: ``backward_fn(*nondiff_args, residuals, y_ct)`` returning
      ``(variable_cts, *input_cts)``; it has no scope.
    grad_vars: the collections that get cotangents.
    nondiff_argnums: arguments (scope = 0) that are not differentiated.
  """

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
    grad_variables, other_variables = variable_groups
    scopes_treedef = None

    def f(grad_variables, *args):
      scope = scope_fn((grad_variables, other_variables), rng_groups)
      return fn(scope, *args), repack_fn(scope)

    f = jax.custom_vjp(f, nondiff_argnums=tuple(nondiff_argnums))

    def f_fwd(grad_variables, *args):
      nonlocal scopes_treedef
      scopes = scope_fn((grad_variables, other_variables), rng_groups)
      scopes_treedef = jax.tree_util.tree_structure(
        scopes, is_leaf=lambda x: isinstance(x, Scope)
      )
      y, res = forward_fn(scopes, *args)
      return (y, repack_fn(scopes)), res

    def f_bwd(*args):
      nondiff_args = args[:-2]
      res, (y_ct, _) = args[-2:]
      var_t, *inputs_t = backward_fn(*nondiff_args, res, y_ct)
      var_t = tuple(scopes_treedef.flatten_up_to(var_t))
      return (var_t, *inputs_t)

    f.defvjp(f_fwd, f_bwd)
    return f(grad_variables, *args)

  return pack(
    inner, (grad_vars, True), (grad_vars, True), (True,), name='custom_vjp'
  )


def map_variables(
  fn: Callable[..., Any],
  mapped_collections: CollectionFilter,
  map_in_fn: _Fn = id_fn,
  map_out_fn: _Fn = id_fn,
  init: bool = False,
  mutable: bool = False,
  rngs: PRNGSequenceFilter = True,
  variables: CollectionFilter = True,
) -> Callable[..., Any]:
  """Maps some collections on their way into (and out of) ``fn``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, lift
  >>> def f(scope):
  ...   return scope.param('w', jax.nn.initializers.ones, (2,))
  >>> doubled = lift.map_variables(
  ...     f, 'params', lambda v: jax.tree_util.tree_map(lambda x: 2 * x, v),
  ...     init=True)
  >>> init(doubled)(jax.random.key(0))[0].tolist()
  [2.0, 2.0]

  Args:
    fn: ``fn(scope, *args)``.
    mapped_collections: the collections to map.
    map_in_fn: applied to ``{collection: values}`` going in.
    map_out_fn: applied to the mapped collections coming out (only when
      ``init`` or ``mutable``).
    init: if True and the mapped collections are mutable, ``fn`` first runs
      once so they can be created, then ``map_out_fn`` is applied.
    mutable: whether the mapped collections may be changed inside.
    rngs: the PRNG streams made available inside.
    variables: the other collections made available inside.
  """
  is_target_out = mutable or init
  in_vars = (mapped_collections, variables)
  if is_target_out:
    out_vars = in_vars
  else:
    out_vars = (False, subtract_filters(variables, mapped_collections))

  def wrapper(scope_fn, repack, variable_groups, rng_groups, *args, **kwargs):
    target, rest = variable_groups
    if init:
      scopes = scope_fn((target, rest), rng_groups)
      leaves = jax.tree_util.tree_leaves(
        scopes, is_leaf=lambda x: isinstance(x, Scope)
      )
      if any(
        intersect_filters(s.mutable, mapped_collections) not in (False, set())
        for s in leaves
      ):
        fn(scopes, *args, **kwargs)
        target, _ = repack(scopes)
        target = tuple(map_out_fn(x) for x in target)
    target = tuple(map_in_fn(x) for x in target)
    if not is_target_out:
      from flax.core.frozen_dict import freeze

      target = tuple(freeze(x) for x in target)
    scopes = scope_fn((target, rest), rng_groups)
    y = fn(scopes, *args, **kwargs)
    out_target, out_rest = repack(scopes)
    if is_target_out:
      out_target = tuple(map_out_fn(x) for x in out_target)
    return y, (out_target, out_rest)

  return pack(
    wrapper,
    in_vars,
    out_vars,
    (rngs,),
    name='map_variables',
    enable_kwargs=True,
  )


def fold_rngs(
  fn: Callable[..., Any],
  variables: CollectionFilter = True,
  rngs: PRNGSequenceFilter = True,
) -> Callable[..., Any]:
  """Runs ``fn`` with each PRNG stream forked into a plain key.

  Every stream draws one key on entry, as ``make_rng`` would (advancing the
  outer counter); keys made inside are derived from it, counting on from
  the outer counter, which is updated on exit. The keys are those
  ``lift.jit`` gives, and carry no static suffix (no compile-time
  constants).
  """

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
    keys, outer_counters, counters = forked_rng_groups(scope_fn, rng_groups)
    scope = scope_fn(variable_groups, keys, rng_counters=counters)
    y = fn(scope, *args, **kwargs)
    out = repack_fn(scope)
    write_back_counters(outer_counters, counters)
    return y, out

  return _pack_same(inner, variables, rngs, 'fold_rngs', enable_kwargs=True)


_SCAN_SHARED = (
  'variable_broadcast',
  'variable_carry',
  'variable_axes',
  'split_rngs',
)


def remat_scan(
  body_fn: Callable[..., Any],
  lengths,
  policy: Optional[Callable[..., bool]] = None,
  variable_broadcast: CollectionFilter = False,
  variable_carry: CollectionFilter = False,
  variable_axes: Mapping[CollectionFilter, int] = {True: 0},
  split_rngs: Mapping[PRNGSequenceFilter, bool] = {True: True},
) -> Callable[..., Any]:
  """Loops ``body_fn(scope, carry) -> carry`` ``prod(lengths)`` times.

  One nested :func:`scan` per entry of ``lengths``, each body wrapped in
  :func:`checkpoint`, so memory grows with ``sum(lengths)`` instead of
  ``prod(lengths)``. Variables get one leading axis per level.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, lift
  >>> def body(scope, c):
  ...   return c + scope.param('b', jax.nn.initializers.ones, ())
  >>> c, variables = init(lift.remat_scan(body, (2, 3)))(
  ...   jax.random.key(0), 0.0)
  >>> c.item(), variables['params']['b'].shape
  (6.0, (2, 3))
  """
  # The variable handling every nested scan shares.
  given = locals()
  scan_options = {k: given[k] for k in _SCAN_SHARED}
  scan_fn = functools.partial(scan, **scan_options)
  lengths = tuple(lengths)
  if len(lengths) == 1:

    def wrapper(scope, carry):
      return body_fn(scope, carry), ()

    inner = checkpoint(wrapper, policy=policy)
  else:

    def loop(scope, carry):
      nested = remat_scan(body_fn, lengths[1:], policy, **scan_options)
      return nested(scope, carry), ()

    inner = checkpoint(loop, policy=policy)

  def fn(scope, carry):
    return scan_fn(inner, length=lengths[0])(scope, carry)[0]

  return fn
