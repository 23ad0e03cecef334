"""Functional entry points: ``nn.apply``, ``nn.init``, interceptors, ...

>>> import jax, jax.numpy as jnp
>>> from flax import linen as nn
>>> class M(nn.Module):
...   @nn.compact
...   def __call__(self, x):
...     return x * self.param('w', jax.nn.initializers.ones, ())
>>> variables = nn.init(lambda m, x: m(x), M())(jax.random.key(0), 2.0)
>>> nn.apply(lambda m, x: m(x) + 1, M())(variables, 2.0)
Array(3., dtype=float32)
"""

import contextlib
import dataclasses
import functools
from typing import Any, Callable

from flax import errors
from flax.core import scope as core_scope
from flax.core.scope import DenyList
from flax.linen import _context
from flax.linen import module as module_lib

context = _context.context


def _capture_filter(capture_intermediates):
  if capture_intermediates is True:
    return module_lib.capture_call_intermediates
  return capture_intermediates


def _scope_fn(fn, module, capture):
  @functools.wraps(fn)
  def scope_fn(scope, *args, **kwargs):
    context.capture_stack.append(capture)
    try:
      return fn(module.clone(parent=scope, _deep_clone=True), *args, **kwargs)
    finally:
      context.capture_stack.pop()

  return scope_fn


def _with_capture(mutable, capture):
  if capture:
    return core_scope.union_filters(mutable, 'intermediates')
  return mutable


def apply(fn: Callable, module, mutable=False, capture_intermediates=False):
  """Turns ``fn(module, *args)`` into ``f(variables, *args, rngs=None)``.

  ``fn`` receives a clone of ``module`` bound to the variables. The result
  is ``fn``'s output, or ``(output, mutated_variables)`` when any
  collection is mutable.
  """
  capture = _capture_filter(capture_intermediates)
  return core_scope.apply(
    _scope_fn(fn, module, capture), mutable=_with_capture(mutable, capture)
  )


def init_with_output(
  fn: Callable,
  module,
  mutable=DenyList('intermediates'),
  capture_intermediates=False,
):
  """Turns ``fn(module, *args)`` into ``f(rngs, *args) -> (out, vars)``."""
  capture = _capture_filter(capture_intermediates)
  return core_scope.init(
    _scope_fn(fn, module, capture), mutable=_with_capture(mutable, capture)
  )


def init(
  fn: Callable,
  module,
  mutable=DenyList('intermediates'),
  capture_intermediates=False,
):
  """Turns ``fn(module, *args)`` into ``f(rngs, *args) -> variables``."""
  init_fn = init_with_output(fn, module, mutable, capture_intermediates)

  @functools.wraps(init_fn)
  def init_wrapper(*args, **kwargs):
    return init_fn(*args, **kwargs)[1]

  return init_wrapper


def merge_param(name: str, a, b):
  """Returns whichever of ``a`` (attribute) and ``b`` (call argument) is
  set; exactly one must be.

  >>> from flax import linen as nn
  >>> nn.merge_param('deterministic', None, True)
  True
  """
  a_set = a is not None
  b_set = b is not None
  if a_set and b_set:
    raise ValueError(
      f'Parameter "{name}" was passed to the constructor and at call time.'
      ' Should be passed just once.'
    )
  if not a_set and not b_set:
    raise ValueError(
      f'Parameter "{name}" must be passed to the constructor or at call time.'
    )
  return a if a_set else b


def _is_descendant(scope, ancestor) -> bool:
  while scope is not None:
    if scope is ancestor:
      return True
    scope = scope.parent
  return False


def share_scope(module, other, /):
  """Makes ``other`` use the scope of ``module`` (or the reverse).

  Typically called in ``setup`` so that a submodule's variables appear
  directly in its parent's namespace.
  """
  if module.scope is None or other.scope is None:
    raise errors.CallShareScopeOnUnboundModuleError()
  if _is_descendant(other.scope, module.scope):
    _move_scope(other, module.scope)
  else:
    _move_scope(module, other.scope)


def _move_scope(module, scope) -> None:
  """Gives ``module`` the scope ``scope``; its bound children follow."""
  old = module.scope
  object.__setattr__(module, 'scope', scope)
  if scope is old:
    return
  for name, child in list(module._state.children.items()):
    child_scope = getattr(child, 'scope', None)
    if child_scope is not None and child_scope.parent is old:
      _move_scope(child, scope.push(name))


@dataclasses.dataclass(frozen=True)
class InterceptorContext:
  """What an interceptor learns about the intercepted call.

  Attributes:
    module: the Module whose method is called.
    method_name: the name of the method.
    orig_method: the method, unwrapped, taking the Module first.
  """

  module: Any
  method_name: str
  orig_method: Callable


@contextlib.contextmanager
def intercept_methods(interceptor: Callable):
  """Calls ``interceptor(next_fun, args, kwargs, context)`` around every
  Module method call inside the ``with`` block.

  The interceptor may change the arguments or the result; it must call
  ``next_fun(*args, **kwargs)`` to run the method.

  >>> import jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class M(nn.Module):
  ...   def __call__(self, x):
  ...     return x
  >>> def double(next_fun, args, kwargs, context):
  ...   return 2 * next_fun(*args, **kwargs)
  >>> with nn.intercept_methods(double):
  ...   M().apply({}, jnp.ones(1))
  Array([2.], dtype=float32)
  """
  context.interceptor_stack.append(interceptor)
  try:
    yield
  finally:
    assert context.interceptor_stack.pop() is interceptor
