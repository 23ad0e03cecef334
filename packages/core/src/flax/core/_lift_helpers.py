"""Small helpers of ``flax.core.lift``: dict updates, counters, contexts."""

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


class _Pushed:
  """The ``with`` block of :meth:`TransformContext.push`."""

  __slots__ = ('_stack', '_value')

  def __init__(self, stack, value):
    self._stack, self._value = stack, value

  def __enter__(self):
    self._stack.append(self._value)

  def __exit__(self, *exc_info):
    self._stack.pop()


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

  def push(self, a: A):
    """Makes ``a`` the current value inside the block."""
    return _Pushed(self.stack, a)

  def get(self) -> A:
    """The current value (IndexError outside every block)."""
    return self.stack[-1]


def swap_collection(fn: Callable[..., Any], col_a: str, col_b: str):
  """Runs ``fn(scope, ...)`` with collections ``col_a`` and ``col_b`` swapped.

  Whatever ``fn`` writes to one of them lands in the other outside.
  """
  from flax.core.lift import pack

  def swapped(groups):
    # Copies of the variable dicts with the two collections exchanged.
    copies = tuple(dict(g) for g in groups)
    for g in copies:
      g[col_b], g[col_a] = g.get(col_a, {}), g.get(col_b, {})
    return copies

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kw):
    scope = scope_fn((swapped(variable_groups[0]),), rng_groups)
    y = fn(scope, *args, **kw)
    return y, (swapped(repack_fn(scope)[0]),)

  everything = (True,)
  return pack(
    inner, *[everything] * 3, name='swap_collection', enable_kwargs=True
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
