"""Small helpers of ``flax.core.lift``: dict updates, counters, contexts."""

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp

from flax.traverse_util import flatten_dict, unflatten_dict

A = TypeVar('A')


def id_fn(x):
  """Returns ``x`` (the default variable mapping of ``map_variables``)."""
  return x


def set_from_dict(original, updates):
  """Writes the leaves of nested dict ``updates`` into ``original``.

  >>> from flax.core import lift
  >>> d = {'a': {'b': 1, 'c': 2}}
  >>> lift.set_from_dict(d, {'a': {'b': 3}})
  >>> d
  {'a': {'b': 3, 'c': 2}}
  """
  for key, value in updates.items():
    if (
      key in original
      and isinstance(value, Mapping)
      and isinstance(original[key], dict)
    ):
      set_from_dict(original[key], value)
    else:
      original[key] = value


class CountsHolder:
  """Counters kept as a flat ``{path_tuple: count}`` dict.

  >>> from flax.core import lift
  >>> a = lift.CountsHolder.make({'x': {'y': 3}})
  >>> a.sub(lift.CountsHolder.make({'x': {'y': 1}})).unflat()
  {'x': {'y': 2}}
  """

  def __init__(self, flat_d):
    self.flat_d = flat_d

  @classmethod
  def make(cls, d) -> 'CountsHolder':
    """Builds it from a nested dict."""
    return cls(flatten_dict(d))

  def sub(self, other: 'CountsHolder') -> 'CountsHolder':
    """``self - other``, key by key (missing keys count 0)."""
    return CountsHolder(
      {k: v - other.flat_d.get(k, 0) for k, v in self.flat_d.items()}
    )

  def add(self, other: 'CountsHolder') -> 'CountsHolder':
    """``self + other``, key by key (missing keys count 0)."""
    keys = dict.fromkeys([*self.flat_d, *other.flat_d])
    return CountsHolder(
      {k: self.flat_d.get(k, 0) + other.flat_d.get(k, 0) for k in keys}
    )

  def unflat(self):
    """The counters as a nested dict."""
    return unflatten_dict(self.flat_d)


@dataclasses.dataclass
class TransformContext(Generic[A]):
  """A stack of values set by nested ``with context.push(value):`` blocks.

  >>> from flax.core import lift
  >>> ctx = lift.TransformContext()
  >>> with ctx.push(3):
  ...   ctx.get()
  3
  """

  stack: list = dataclasses.field(default_factory=list)

  @contextlib.contextmanager
  def push(self, a: A):
    """Makes ``a`` the current value inside the block."""
    self.stack.append(a)
    try:
      yield
    finally:
      self.stack.pop()

  def get(self) -> A:
    """The current value (IndexError outside every block)."""
    return self.stack[-1]


def swap_collection(fn: Callable[..., Any], col_a: str, col_b: str):
  """Runs ``fn(scope, ...)`` with collections ``col_a`` and ``col_b`` swapped.

  Whatever ``fn`` writes to one of them lands in the other outside.
  """
  from flax.core.lift import pack

  def swap(target):
    a = target.get(col_a, {})
    b = target.get(col_b, {})
    target[col_b], target[col_a] = a, b

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kw):
    (target,) = variable_groups
    target = [dict(t) for t in target]
    for t in target:
      swap(t)
    scope = scope_fn((tuple(target),), rng_groups)
    y = fn(scope, *args, **kw)
    (out,) = repack_fn(scope)
    out = [dict(t) for t in out]
    for t in out:
      swap(t)
    return y, (tuple(out),)

  return pack(
    inner,
    (True,),
    (True,),
    (True,),
    name='swap_collection',
    enable_kwargs=True,
  )


def value_and_grad(
  fn: Callable[..., Any],
  scope,
  *primals,
  has_aux: bool = False,
  reduce_axes=(),
  variables=True,
  rngs=True,
):
  """Lifted value and gradient with respect to the inputs ``primals``.

  Returns ``(y, grads)`` (``(y, aux, grads)`` with ``has_aux``), where
  ``grads`` is the tuple of the gradients of each primal; ``fn`` must
  return a scalar.
  """
  from flax.core.lift import vjp

  out = vjp(
    fn,
    scope,
    *primals,
    has_aux=has_aux,
    reduce_axes=reduce_axes,
    vjp_variables=False,
    variables=variables,
    rngs=rngs,
  )
  if has_aux:
    y, bwd, aux = out
  else:
    (y, bwd), aux = out, None
  _, *grads = bwd(jnp.ones_like(y))
  grads = tuple(grads)
  jax.tree_util.tree_leaves(grads)  # a plain tuple of arrays
  return (y, aux, grads) if has_aux else (y, grads)
