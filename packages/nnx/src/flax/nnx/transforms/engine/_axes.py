"""Per-leaf axes of mapped transforms (vmap, pmap, scan): broadcasting
axis prefixes over arguments whose graph nodes are ``NodeStates``."""

import jax
import jax.numpy as jnp

from flax.nnx.transforms.engine import common
from flax.nnx.transforms.engine.types import Carry, StateAxes, StateSharding
from flax.nnx.transforms.engine.varflow import arg_index_of_positions

_is_ns = lambda x: isinstance(x, common.NodeStates)  # noqa: E731


def _axes_leaf(x):
  return x is None or isinstance(x, (int, StateAxes)) or x is Carry


def _broadcast(prefix, tree, is_leaf=_axes_leaf):
  """Per-leaf values of ``prefix`` broadcast over ``tree`` (flat list)."""
  out = []

  def visit(p, t):
    n = len(jax.tree_util.tree_leaves(t))
    out.extend([p] * n)
    return None

  jax.tree.map(visit, prefix, tree, is_leaf=is_leaf)
  return out


def _state_axes_prefix(in_axes, pure_args, ga):
  """Replaces StateAxes in ``in_axes`` by NodeStates-shaped prefixes."""

  def conv(ax, arg):
    if isinstance(ax, StateAxes):

      def node(x):
        if _is_ns(x):
          default = None if isinstance(ax, StateSharding) else None
          axes = list(ax.axes) + [default]
          return common.NodeStates(tuple(axes[: len(x.groups)]), x.key)
        return None

      return jax.tree.map(node, arg, is_leaf=_is_ns)
    return ax

  return tuple(conv(ax, arg) for ax, arg in zip(in_axes, pure_args))


def _predicates_for(in_axes, args):
  arg_of = arg_index_of_positions(args)

  def pf(k, pos):
    ax = in_axes[arg_of[pos]] if arg_of[pos] < len(in_axes) else None
    if isinstance(ax, StateAxes):
      return ax.predicates
    return None

  return pf


def _move(x, src, dst):
  if src == dst:
    return x
  return jnp.moveaxis(x, src, dst)


def root_in_axes(in_axes, args, ga):
  """The ``in_axes`` entry of the argument holding each graph node of
  ``ga`` (None past the end of ``in_axes``)."""
  arg_of = arg_index_of_positions(args)
  return [
    in_axes[arg_of[pos]] if arg_of[pos] < len(in_axes) else None
    for pos in ga.positions
  ]


def int_axis(axis):
  """``axis`` as one int axis (a StateAxes giving every filter the same int
  counts as that), or None if it is not one (None, Carry, mixed axes)."""
  if isinstance(axis, StateAxes) and len(set(axis.axes)) == 1:
    axis = axis.axes[0]
  if isinstance(axis, int) and not isinstance(axis, bool):
    return axis
  return None
