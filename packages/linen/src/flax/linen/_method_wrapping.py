"""Decorators and method wrapping of Linen Modules.

``compact`` and ``nowrap`` mark methods; ``wrap_method_once`` gives every
other method of a Module subclass lazy setup and call-state handling, and
descriptors (properties) a clear error when they raise AttributeError.
"""

import functools
from typing import Callable

from flax import errors


# -- decorators ---------------------------------------------------------------


def compact(fun: Callable) -> Callable:
  """Marks a Module method that may define submodules and variables inline.

  Several methods of a class may be compact; they share the Module's
  automatic names (``Dense_0``, ``Dense_1``, ...), which count on while one
  compact call runs inside another and start again at each outermost call.

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class Bias(nn.Module):
  ...   @nn.compact
  ...   def __call__(self, x):
  ...     return x + self.param('b', jax.nn.initializers.zeros, x.shape)
  >>> Bias().init(jax.random.key(0), jnp.ones(2))['params']['b'].shape
  (2,)
  """
  fun.compact = True
  return fun


def nowrap(fun: Callable) -> Callable:
  """Marks a Module method as a plain helper.

  A ``nowrap`` method is not wrapped with the Module's state handling (no
  lazy setup, no named scope), so it can be called on unbound Modules and
  from ``setup``.

  >>> from flax import linen as nn
  >>> class M(nn.Module):
  ...   features: int
  ...   @nn.nowrap
  ...   def twice(self):
  ...     return 2 * self.features
  >>> M(3).twice()
  6
  """
  fun.nowrap = True
  return fun


def _get_fn_name(fn) -> str:
  if isinstance(fn, functools.partial):
    return _get_fn_name(fn.func)
  return getattr(fn, '__name__', 'unnamed_function')


def _derive_profiling_name(module, fn) -> str:
  fn_name = _get_fn_name(fn)
  suffix = f'.{fn_name}' if fn_name != '__call__' else ''
  return f'{module.name or type(module).__name__}{suffix}'


def wrap_method_once(fun: Callable) -> Callable:
  """Wraps a Module method with lazy setup and call-state handling."""
  if getattr(fun, 'method_handler_wrapped', False):
    return fun

  @functools.wraps(fun)
  def wrapped_module_method(*args, **kwargs):
    # Only Modules have ``_call_wrapped_method``; a plain call otherwise.
    if args and hasattr(type(args[0]), '_call_wrapped_method'):
      return args[0]._call_wrapped_method(fun, args[1:], kwargs)
    return fun(*args, **kwargs)

  wrapped_module_method.method_handler_wrapped = True
  return wrapped_module_method


class _DescriptorWrapper:
  """Turns AttributeErrors raised inside a property into a clear error."""

  def __init__(self, wrapped):
    self.wrapped = wrapped
    self.__doc__ = getattr(wrapped, '__doc__', None)

  def __set_name__(self, owner, name):
    if hasattr(self.wrapped, '__set_name__'):
      self.wrapped.__set_name__(owner, name)

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self.wrapped.__get__(obj, objtype)
    try:
      return self.wrapped.__get__(obj, objtype)
    except AttributeError as e:
      raise errors.DescriptorAttributeError() from e

  def __getattr__(self, name):
    # While unpickling, ``wrapped`` is not set yet.
    try:
      wrapped = self.__dict__['wrapped']
    except KeyError:
      raise AttributeError(name) from None
    return getattr(wrapped, name)


class _DataDescriptorWrapper(_DescriptorWrapper):
  def __set__(self, obj, value):
    self.wrapped.__set__(obj, value)

  def __delete__(self, obj):
    self.wrapped.__delete__(obj)


def _wrap_descriptor_once(descriptor):
  if isinstance(descriptor, _DescriptorWrapper):
    return descriptor
  if hasattr(descriptor, '__set__'):
    return _DataDescriptorWrapper(descriptor)
  return _DescriptorWrapper(descriptor)


# Methods that are never wrapped.
_UNWRAPPED = frozenset(
  {
    '__eq__',
    '__repr__',
    '__init__',
    '__hash__',
    '__post_init__',
    '__getattr__',
    '__setattr__',
    '__delattr__',
    '__getattribute__',
    '__getstate__',
    '__setstate__',
    '__copy__',
    '__deepcopy__',
    '__reduce__',
    '__init_subclass__',
    '__class_getitem__',
    '__dir__',
    '__new__',
    '__lt__',
    '__le__',
    '__gt__',
    '__ge__',
    '__ne__',
    '__str__',
    '__format__',
    '__sizeof__',
    '__reduce_ex__',
    '__subclasshook__',
  }
)


def capture_call_intermediates(_, method_name: str) -> bool:
  """Default ``capture_intermediates`` filter: every ``__call__`` output."""
  del _
  return method_name == '__call__'
