"""Partial evaluation: compute the outputs that do not depend on some inputs.

Used by :func:`flax.core.lazy_init` (variables that need only the input
shapes) and by :mod:`flax.core.axes_scan` (values broadcast out of a scan
body). A function is traced to a jaxpr; a forward pass marks which values
depend on the "unknown" inputs; the other outputs are evaluated from the
jaxpr without running the unneeded equations.
"""

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.extend.core as jex
import numpy as np

from flax import errors


def _is_literal(v) -> bool:
  return isinstance(v, jex.Literal)


def unknown_outputs(jaxpr, unknown_in: Sequence[bool]) -> list:
  """Returns, per output of ``jaxpr``, whether it depends on unknown inputs.

  Args:
    jaxpr: an (open) ``Jaxpr``.
    unknown_in: one bool per ``jaxpr.invars``.
  """
  unknown = {v for v, u in zip(jaxpr.invars, unknown_in) if u}
  for eqn in jaxpr.eqns:
    flags = [not _is_literal(v) and v in unknown for v in eqn.invars]
    if not any(flags):
      continue
    inner = _call_jaxpr(eqn)
    if inner is None:
      unknown.update(eqn.outvars)
    else:
      # A nested call (``jax.jit``, ``checkpoint``): only the outputs that
      # depend on unknown inputs inside it are unknown.
      inner_flags = unknown_outputs(inner, flags)
      unknown.update(v for v, u in zip(eqn.outvars, inner_flags) if u)
  return [not _is_literal(v) and v in unknown for v in jaxpr.outvars]


# Primitives that call a jaxpr on their inputs as they are.
_CALL_PRIMITIVES = frozenset(
  {'jit', 'pjit', 'closed_call', 'core_call', 'remat2', 'checkpoint'}
)


def _call_jaxpr(eqn):
  """The open jaxpr that ``eqn`` calls on its inputs, if it is a call."""
  if eqn.primitive.name not in _CALL_PRIMITIVES:
    return None
  inner = eqn.params.get('jaxpr', eqn.params.get('call_jaxpr'))
  inner = getattr(inner, 'jaxpr', inner)
  if (
    inner is None
    or len(inner.invars) != len(eqn.invars)
    or len(inner.outvars) != len(eqn.outvars)
  ):
    return None
  return inner


def eval_outputs(closed_jaxpr, args: Sequence[Any], wanted: Sequence[bool]):
  """Evaluates only the equations needed for the ``wanted`` outputs.

  Args:
    closed_jaxpr: a ``ClosedJaxpr``.
    args: values for the jaxpr's inputs (unused ones may be dummies).
    wanted: one bool per output.

  Returns:
    A list with the value of each wanted output and None elsewhere.
  """
  jaxpr = closed_jaxpr.jaxpr
  keep, _ = _needed(jaxpr, wanted)
  env = dict(zip(jaxpr.constvars, closed_jaxpr.consts))
  env.update(zip(jaxpr.invars, args))

  def read(v):
    return v.val if _is_literal(v) else env[v]

  for eqn in reversed(keep):
    params = eqn.primitive.get_bind_params(eqn.params)
    subfuns = ()
    if isinstance(params, tuple):  # older JAX: (subfuns, params)
      subfuns, params = params
    with eqn.ctx.manager:
      out = eqn.primitive.bind(*subfuns, *map(read, eqn.invars), **params)
    if not eqn.primitive.multiple_results:
      out = [out]
    env.update(zip(eqn.outvars, out))
  return [read(v) if w else None for v, w in zip(jaxpr.outvars, wanted)]


def _needed(jaxpr, wanted):
  """The equations (last first) and variables the wanted outputs need."""
  needed = {
    v for v, w in zip(jaxpr.outvars, wanted) if w and not _is_literal(v)
  }
  keep = []
  for eqn in reversed(jaxpr.eqns):
    if eqn.effects or any(v in needed for v in eqn.outvars):
      keep.append(eqn)
      needed.update(v for v in eqn.invars if not _is_literal(v))
  return keep, needed


def _zeros_like_aval(aval):
  return np.zeros(aval.shape, aval.dtype)


def lazy_init(fn):
  """Wraps ``fn`` to run only the computation its outputs need.

  Leaves of the arguments that are ``jax.ShapeDtypeStruct`` are abstract;
  every output must be computable without their values.

  Raises:
    LazyInitError: an output depends on the value of an abstract input.
  """

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    is_abstract = [isinstance(x, jax.ShapeDtypeStruct) for x in leaves]
    abstract = [x for x, a in zip(leaves, is_abstract) if a]

    def f(*dynamic):
      it = iter(dynamic)
      full = [next(it) if a else x for x, a in zip(leaves, is_abstract)]
      a, kw = jax.tree_util.tree_unflatten(treedef, full)
      return fn(*a, **kw)

    closed, out_shape = jax.make_jaxpr(f, return_shape=True)(*abstract)
    unknown = unknown_outputs(closed.jaxpr, [True] * len(abstract))
    flat_shapes, out_tree = jax.tree_util.tree_flatten(out_shape)
    for is_unknown, shape in zip(unknown, flat_shapes):
      if is_unknown:
        raise errors.LazyInitError(shape)
    # Inputs no computation reads get no array (they may be huge).
    wanted = [True] * len(unknown)
    _, needed = _needed(closed.jaxpr, wanted)
    dummies = [
      _zeros_like_aval(v.aval) if v in needed else None
      for v in closed.jaxpr.invars
    ]
    out = eval_outputs(closed, dummies, wanted)
    return jax.tree_util.tree_unflatten(out_tree, out)

  return wrapper
