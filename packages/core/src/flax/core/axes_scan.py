"""A ``lax.scan`` with per-argument axes and broadcast inputs and outputs.

:func:`scan` generalizes ``jax.lax.scan``: every input and output has an
axis to scan over (any position, not only the leading one) or the marker
:data:`broadcast`. Broadcast inputs are passed whole to every iteration;
broadcast outputs (and the ``broadcast_out`` values of the body) are
computed once, outside the loop, and may not depend on the carry or the
scanned inputs.

>>> import jax.numpy as jnp
>>> from flax.core import axes_scan
>>> def body(bcast, c, x, w):
...   return bcast, c + x * w, c
>>> scan = axes_scan.scan(body, in_axes=(1, axes_scan.broadcast),
...                       out_axes=0)
>>> _, c, ys = scan((), jnp.zeros(2), jnp.ones((2, 3)), 2.0)
>>> c.tolist(), ys.shape
([6.0, 6.0], (3, 2))
"""

from collections.abc import Callable
from typing import Any, Optional

import jax
import jax.numpy as jnp

from flax.core import partial_eval


class _Broadcast:
  """Marks an input or output that is not scanned over."""

  def __repr__(self):
    return 'broadcast'

  def __reduce__(self):
    return 'broadcast'


broadcast = _Broadcast()


def build_shaped_array(x, batch_dim: bool = False) -> jax.core.ShapedArray:
  """The abstract value (shape, dtype) of ``x``, not weakly typed.

  With ``batch_dim`` the leading axis is left out (the shape of one slice).

  >>> import jax.numpy as jnp
  >>> from flax.core import axes_scan
  >>> axes_scan.build_shaped_array(jnp.ones((2, 3)), batch_dim=True)
  ShapedArray(float32[3])

  Args:
    x: an array, a ``jax.ShapeDtypeStruct`` or a Python scalar.
    batch_dim: drop the leading axis.
  """
  shape = tuple(jnp.shape(x))
  dtype = x.dtype if hasattr(x, 'dtype') else jnp.result_type(x)
  if batch_dim:
    shape = shape[1:]
  return jax.core.ShapedArray(shape, dtype)


def _tree_map_axes(fn, axes, *trees):
  # ``axes`` is a prefix tree whose leaves are ints or ``broadcast``.
  return jax.tree_util.tree_map(
    fn, axes, *trees, is_leaf=lambda x: x is broadcast
  )


def scan(
  fn: Callable[..., Any],
  in_axes: Any,
  out_axes: Any,
  length: Optional[int] = None,
  reverse: bool = False,
  unroll: int = 1,
  _split_transpose: bool = False,
  check_constancy_invariants: bool = True,
) -> Callable[..., Any]:
  """Returns ``scan_fn(broadcast_in, init, *args)`` looping ``fn``.

  Args:
    fn: ``fn(broadcast_in, carry, *xs) -> (broadcast_out, carry, ys)``.
    in_axes: axes of ``args`` (a prefix tree of ints or ``broadcast``).
    out_axes: axes of ``ys`` (same kind).
    length: the number of iterations (inferred from the inputs if None).
    reverse: loop from the end.
    unroll: see ``jax.lax.scan``.
    _split_transpose: passed to ``jax.lax.scan`` (experimental).
    check_constancy_invariants: check that the broadcast outputs do not
      depend on the carry or the scanned inputs. Without the check, ``fn``
      is traced once (no first pass finds the broadcast outputs): the
      broadcast inputs come back unchanged and ``out_axes`` may not hold
      ``broadcast``.

  Returns:
    A function returning ``(broadcast_out, carry, ys)``.

  Raises:
    ValueError: a broadcast output depends on the carry or scanned inputs,
      or ``out_axes`` holds ``broadcast`` without the check.
  """

  def scan_fn(broadcast_in, init, *args):
    def to_front(ax, arg):
      if ax is broadcast:
        return ()
      return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, ax, 0), arg)

    def from_front(ax, y):
      if ax is broadcast:
        return ()
      return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, 0, ax), y)

    if not check_constancy_invariants and any(
      ax is broadcast
      for ax in jax.tree_util.tree_leaves(
        out_axes, is_leaf=lambda x: x is broadcast
      )
    ):
      raise ValueError(
        'nn.scan run with check_constancy_invariants=False does not support'
        ' broadcast non-carry function outputs.  out_axes was given as'
        f' {out_axes}'
      )
    xs = _tree_map_axes(to_front, in_axes, args)

    def body_fn(bcast_in, c, xs, init_mode=False):
      xs = _tree_map_axes(
        lambda ax, arg, x: arg if ax is broadcast else x, in_axes, args, xs
      )
      broadcast_out, c, ys = fn(bcast_in, c, *xs)
      if init_mode:
        ys = _tree_map_axes(
          lambda ax, y: y if ax is broadcast else (), out_axes, ys
        )
        return broadcast_out, ys
      ys = _tree_map_axes(
        lambda ax, y: () if ax is broadcast else y, out_axes, ys
      )
      return c, ys

    if not check_constancy_invariants:
      # One pass only: the broadcast values stay as they came in (what the
      # body would make or change in them is dropped).
      c, ys = jax.lax.scan(
        lambda c, x: body_fn(broadcast_in, c, x),
        init,
        xs,
        length=length,
        reverse=reverse,
        unroll=unroll,
        _split_transpose=_split_transpose,
      )
      return broadcast_in, c, _tree_map_axes(from_front, out_axes, ys)

    # Pass 1: find the broadcast outputs, which must not depend on the
    # carry or on the scanned inputs, and compute them outside the loop.
    def spec(x, drop_leading=False):
      shape = jnp.shape(x)[1:] if drop_leading else jnp.shape(x)
      return jax.ShapeDtypeStruct(shape, jnp.result_type(x))

    carry_specs = jax.tree_util.tree_map(spec, init)
    x_specs = jax.tree_util.tree_map(lambda x: spec(x, True), xs)
    closed, out_shape = jax.make_jaxpr(
      lambda c, x: body_fn(broadcast_in, c, x, init_mode=True),
      return_shape=True,
    )(carry_specs, x_specs)
    n_in = len(closed.jaxpr.invars)
    if check_constancy_invariants and any(
      partial_eval.unknown_outputs(closed.jaxpr, [True] * n_in)
    ):
      raise ValueError(
        'broadcasted variable has a data dependency on the scan body.'
      )
    dummies = [
      jnp.zeros(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars
    ]
    n_out = len(closed.jaxpr.outvars)
    flat = partial_eval.eval_outputs(closed, dummies, [True] * n_out)
    out_tree = jax.tree_util.tree_structure(out_shape)
    broadcast_in, constants_out = jax.tree_util.tree_unflatten(out_tree, flat)

    # Pass 2: the loop itself, with the broadcast values as constants.
    c, ys = jax.lax.scan(
      lambda c, x: body_fn(broadcast_in, c, x),
      init,
      xs,
      length=length,
      reverse=reverse,
      unroll=unroll,
      _split_transpose=_split_transpose,
    )
    ys = _tree_map_axes(from_front, out_axes, ys)
    ys = _tree_map_axes(
      lambda ax, const, y: const if ax is broadcast else y,
      out_axes,
      constants_out,
      ys,
    )
    return broadcast_in, c, ys

  return scan_fn
