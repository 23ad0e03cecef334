"""Lifted control flow: ``scan``, ``while_loop``, ``cond`` and ``switch``.

All of them are built on :func:`flax.core.lift.pack`.
"""

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from flax.core import axes_scan
from flax.core._filters import CollectionFilter, PRNGSequenceFilter
from flax.core._pack import (
  _unzip2,
  axis_subtrees,
  mapped_size,
  pack,
  split_in_out_axes,
)
from flax.core._rng import tree_map_rngs
from flax.core.scope import Scope


def _meta():
  from flax.core import meta

  return meta


_AxisByFilter = Mapping[CollectionFilter, int]
_SplitByFilter = Mapping[PRNGSequenceFilter, bool]
_OptInt = int | None
_DataTransform = Callable[..., Any] | None


def scan(
  fn: Callable[..., Any],
  variable_axes: _AxisByFilter = {},
  variable_broadcast: CollectionFilter = False,
  variable_carry: CollectionFilter = False,
  split_rngs: _SplitByFilter = {},
  in_axes: Any = 0,
  out_axes: Any = 0,
  length: _OptInt = None,
  reverse: bool = False,
  unroll: int = 1,
  _split_transpose: bool = False,
  data_transform: _DataTransform = None,
  metadata_params: Mapping[Any, Any] = {},
  check_constancy_invariants: bool = True,
) -> Callable[..., Any]:
  """Lifted ``jax.lax.scan`` of ``fn(scope, carry, *xs) -> (carry, ys)``.

  Variables are handled per collection: scanned (``variable_axes``, one
  slice per iteration), broadcast (``variable_broadcast``: the same value in
  every iteration, initialized once), or carried (``variable_carry``: passed
  from one iteration to the next; cannot be initialized inside the body).

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, lift
  >>> def body(scope, c, x):
  ...   w = scope.param('w', jax.nn.initializers.ones, ())
  ...   return c + w * x, c
  >>> scanned = lift.scan(body, variable_broadcast='params',
  ...                     split_rngs={'params': False})
  >>> (c, ys), variables = init(scanned)(jax.random.key(0), 0.0,
  ...                                    jnp.arange(3.0))
  >>> c.item(), ys.tolist(), variables['params']['w'].shape
  (3.0, [0.0, 0.0, 1.0], ())

  Args:
    fn: the body.
    variable_axes: collection filter -> the axis of the stacked variables.
    variable_broadcast: collections shared by all iterations.
    variable_carry: collections carried between iterations.
    split_rngs: stream filter -> whether each iteration gets its own keys.
    in_axes: axes of ``xs`` to scan over (``axes_scan.broadcast`` to pass
      an argument whole).
    out_axes: axes of the stacked ``ys``.
    length: number of iterations if no input is scanned.
    reverse: loop from the end.
    unroll: see ``jax.lax.scan``.
    data_transform: optional ``f(variable_groups, rng_groups)`` applied to
      the lifted data inside the body.
    metadata_params: passed to ``AxisMetadata.add_axis``/``remove_axis``.
    _split_transpose: passed to ``jax.lax.scan`` (experimental).
    check_constancy_invariants: check that broadcast variables do not
      depend on the carry or the scanned inputs. Without the check the body
      is traced once; broadcast variables it would create or change are
      dropped, and ``out_axes`` may not hold ``broadcast``.

  Returns:
    The lifted function ``(scope, init_carry, *xs) -> (carry, ys)``.
  """
  variable_in_groups, variable_out_groups, variable_in_axes = split_in_out_axes(
    variable_axes
  )
  # Handed unchanged to ``axes_scan.scan``.
  loop_options = dict(
    reverse=reverse,
    unroll=unroll,
    _split_transpose=_split_transpose,
    check_constancy_invariants=check_constancy_invariants,
  )
  rng_groups, rng_splits = _unzip2(split_rngs.items())
  rng_axes = tuple(0 if s else axes_scan.broadcast for s in rng_splits)

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, init, *args):
    def first_leaf_lengths():
      # The length of a scanned input is read off its first leaf.
      for axis, tree in axis_subtrees(
        in_axes, args, lambda a: a is axes_scan.broadcast
      ):
        leaves = jax.tree_util.tree_leaves(tree)
        if axis is not axes_scan.broadcast and leaves:
          yield jax.numpy.shape(leaves[0])[axis]

    n = mapped_size(
      first_leaf_lengths(),
      length,
      'Inconsistent scan lengths: {}',
      'length should be specified manually.',
    )

    rng_groups = tuple(
      tree_map_rngs(lambda rng: jax.random.split(rng, n), group)
      if split
      else group
      for group, split in zip(rng_groups, rng_splits)
    )

    def body(broadcast_vars, carry, scan_variable_groups, rng_groups, args):
      groups = (broadcast_vars, carry[0], *scan_variable_groups)
      if data_transform is not None:
        groups, rng_groups = data_transform(groups, rng_groups)
      scope = scope_fn(groups, rng_groups)
      c, y = fn(scope, carry[1], *args)
      broadcast_out, carry_out, *scanned_out = repack_fn(scope)
      # Broadcast collections the body only read go back out as well, so
      # the loop sees them as constants.
      for seen, out in zip(broadcast_vars, broadcast_out):
        out.update({col: v for col, v in seen.items() if col not in out})
      return broadcast_out, (carry_out, c), (y, tuple(scanned_out))

    scanned = axes_scan.scan(
      body,
      in_axes=(variable_in_axes, rng_axes, in_axes),
      out_axes=(out_axes, variable_in_axes),
      length=length,
      **loop_options,
    )

    meta = _meta()
    broadcast_vars = variable_groups[0]
    carry_vars = variable_groups[1]
    scan_vars = tuple(
      meta.remove_axis(group, axis, metadata_params)
      for group, axis in zip(variable_groups[2:], variable_in_axes)
    )
    broadcast_vars, (carry_vars, c), (ys, scan_vars) = scanned(
      broadcast_vars, (carry_vars, init), scan_vars, rng_groups, args
    )
    scan_vars = tuple(
      meta.add_axis(group, axis, metadata_params)
      for group, axis in zip(scan_vars, variable_in_axes)
    )
    return (c, ys), (broadcast_vars, carry_vars) + scan_vars

  in_groups = (variable_broadcast, variable_carry) + variable_in_groups
  out_groups = (variable_broadcast, variable_carry) + variable_out_groups
  return pack(inner, in_groups, out_groups, rng_groups, name='scan')


def while_loop(
  cond_fn: Callable[[Scope, Any], Any],
  body_fn: Callable[[Scope, Any], Any],
  scope: Scope,
  init,
  carry_variables: CollectionFilter = False,
  broadcast_variables: CollectionFilter = True,
  split_rngs: Mapping[PRNGSequenceFilter, bool] = {},
):
  """Lifted ``jax.lax.while_loop``.

  ``cond_fn(scope, carry)`` sees every variable read-only;
  ``body_fn(scope, carry) -> carry`` may update ``carry_variables`` (which
  keep their shapes) but cannot create variables.

  >>> import jax.numpy as jnp
  >>> from flax.core import apply, lift
  >>> def count(scope):
  ...   def body(scope, c):
  ...     n = scope.variable('state', 'n')
  ...     n.value += 1
  ...     return c + 1
  ...   return lift.while_loop(lambda scope, c: c < 5, body, scope, 0,
  ...                          carry_variables='state')
  >>> _, state = apply(count, mutable='state')({'state': {'n': 0}})
  >>> int(state['state']['n'])
  5
  """
  rng_groups, rng_splits = _unzip2(split_rngs.items())

  def inner(scope_fn, repack_fn, variable_groups, rng_groups):
    carry_vars, broadcast_vars = variable_groups

    def loop_rngs(i):
      return tuple(
        tree_map_rngs(lambda rng: jax.random.fold_in(rng, i), group)
        if split
        else group
        for group, split in zip(rng_groups, rng_splits)
      )

    def cond_wrapper(c):
      i, carry_vars, carry = c
      scope = scope_fn(
        (carry_vars, broadcast_vars), loop_rngs(-i), mutable_filter=False
      )
      return cond_fn(scope, carry)

    def body_wrapper(c):
      i, carry_vars, carry = c
      scope = scope_fn((carry_vars, broadcast_vars), loop_rngs(i))
      carry = body_fn(scope, carry)
      (carry_vars,) = repack_fn(scope)
      return (i + 1, carry_vars, carry)

    final = jax.lax.while_loop(
      cond_wrapper, body_wrapper, (0, carry_vars, init)
    )
    return final[2], (final[1],)

  # Only the carried collections come back out of the loop.
  groups = (carry_variables, broadcast_variables)
  return pack(inner, groups, groups[:1], rng_groups, name='while_loop')(scope)


def cond(
  pred,
  true_fun: Callable[..., Any],
  false_fun: Callable[..., Any],
  scope: Scope,
  *operands,
  variables: CollectionFilter = True,
  rngs: PRNGSequenceFilter = True,
):
  """Lifted ``jax.lax.cond``; branches are ``fun(scope, *operands)``.

  Both branches must create and update the same variables.
  """
  # the true branch first: branches are traced in order and each takes
  # its RNG keys as it is traced (the true branch initializes with the
  # keys a plain call would use)
  return switch(
    jax.numpy.logical_not(pred).astype('int32'),
    (true_fun, false_fun),
    scope,
    *operands,
    variables=variables,
    rngs=rngs,
    _name='cond',
  )


def switch(
  index,
  branches: Sequence[Callable[..., Any]],
  scope: Scope,
  *operands,
  variables: CollectionFilter = True,
  rngs: PRNGSequenceFilter = True,
  _name: str = 'switch',
):
  """Lifted ``jax.lax.switch``; branches are ``fun(scope, *operands)``.

  All branches must create and update the same variables (at init, run
  every branch once when they define different variables).
  """

  def inner(scope_fn, repack_fn, variable_groups, rng_groups):
    def branch_wrapper(branch_fn, *operands):
      scope = scope_fn(variable_groups, rng_groups)
      y = branch_fn(scope, *operands)
      return y, repack_fn(scope)

    pure = [functools.partial(branch_wrapper, b) for b in branches]
    return jax.lax.switch(index, pure, *operands)

  return pack(inner, (variables,), (variables,), (rngs,), name=_name)(scope)
