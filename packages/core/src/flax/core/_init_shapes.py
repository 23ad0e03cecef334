"""The shapes an initializer produces, computed once per initializer.

``Scope.param`` checks an existing parameter against the shapes its
initializer would give. Computing them runs ``jax.eval_shape`` (a trace of
the initializer), which costs far more than the rest of a parameter read,
so the result is cached per initializer and arguments.

Initializers are often made on every call (``nn.initializers.normal(0.02)``
inside a compact method), so a plain function is keyed by its code, its
defaults and the values it closes over rather than by identity.
"""

import functools
import types
from typing import Any, Callable

import jax

_MAX_ENTRIES = 4096
_cache: dict = {}


def _fn_key(fn):
  """A hashable key equal for functions that compute the same thing.

  Plain functions are keyed by their code, defaults and closure values
  (so a fresh ``normal(0.02)`` made on every call still hits the cache);
  anything else by identity. The key holds references to what it is made
  of, so ids are never reused while it lives in the cache.
  """
  if type(fn) is types.FunctionType:
    closure = fn.__closure__
    if closure is None and fn.__defaults__ is None:
      return fn
    kwdefaults = fn.__kwdefaults__
    return (
      fn.__code__,
      fn.__defaults__,
      tuple(sorted(kwdefaults.items())) if kwdefaults else None,
      tuple(c.cell_contents for c in closure) if closure else None,
    )
  if isinstance(fn, functools.partial):
    return (
      functools.partial,
      _fn_key(fn.func),
      fn.args,
      tuple(sorted(fn.keywords.items())),
    )
  return fn


def init_shapes(init_fn: Callable, args: tuple, kwargs: dict) -> tuple:
  """Returns the leaf shapes of ``init_fn(key, *args, **kwargs)``.

  Args:
    init_fn: a parameter initializer taking a PRNG key first.
    args: its other positional arguments.
    kwargs: its keyword arguments.

  Returns:
    A tuple with the shape of each leaf of the initializer's output.
  """
  try:
    key = (_fn_key(init_fn), args, tuple(kwargs.items()) if kwargs else None)
    hash(key)
  except (TypeError, ValueError):  # unhashable values, empty cells
    key = None
  if key is not None:
    shapes = _cache.get(key)
    if shapes is not None:
      return shapes
  abstract: Any = jax.eval_shape(
    lambda: init_fn(jax.random.PRNGKey(0), *args, **kwargs)
  )
  shapes = tuple(x.shape for x in jax.tree_util.tree_leaves(abstract))
  if key is not None:
    if len(_cache) >= _MAX_ENTRIES:
      _cache.clear()
    _cache[key] = shapes
  return shapes
