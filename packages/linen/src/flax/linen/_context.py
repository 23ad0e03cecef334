"""Process-wide state of the Linen module system.

Holds the stack of Modules whose methods are running (so that a Module
constructed inside a method knows its parent), the stack of
``capture_intermediates`` filters, the method interceptors and the
named-call (profiling) switch.
"""

import contextlib
import functools
import threading

from flax.configurations import config
from flax.linen._method_wrapping import _get_fn_name


class _DynamicContext(threading.local):
  """Per-thread stacks used while Modules run.

  Code built on Linen reads this object as ``flax.linen.module._context``:
  ``module_stack[-1]`` is the Module whose method is running (``None`` at
  top level), ``capture_stack`` holds the ``capture_intermediates`` filters
  and ``call_info_stack`` the call recorders of table tools.
  """

  def __init__(self):
    super().__init__()
    # ``None`` at the bottom: Modules made at top level have no parent.
    self.module_stack = [None]
    self.capture_stack = []
    self.call_info_stack = []
    self.interceptor_stack = []
    self.named_call = None  # None: follow the flax_profile flag.

  def use_named_call(self) -> bool:
    if self.named_call is None:
      return config.flax_profile
    return self.named_call


context = _DynamicContext()


def enable_named_call():
  """Wraps every Module method call in ``jax.named_scope`` for profiling.

  Profiles and HLO dumps then show the Module class and method names.

  >>> from flax import linen as nn
  >>> nn.enable_named_call()
  >>> nn.disable_named_call()
  """
  context.named_call = True


def disable_named_call():
  """Stops wrapping Module method calls in ``jax.named_scope``."""
  context.named_call = False


def named_call(class_fn, force: bool = True):
  """Wraps a Module method so that it runs in a ``jax.named_scope``.

  The scope is named ``'<module name>.<method>'`` (the class name for an
  unnamed Module). With ``force=False`` it only applies while named calls
  are enabled.
  """
  import functools

  import jax

  fn_name = getattr(class_fn, '__name__', 'unnamed_function')

  @functools.wraps(class_fn)
  def wrapped(self, *args, **kwargs):
    if not force and not context.use_named_call():
      return class_fn(self, *args, **kwargs)
    prefix = getattr(self, 'name', None) or type(self).__name__
    suffix = '' if fn_name == '__call__' else f'.{fn_name}'
    with jax.named_scope(f'{prefix}{suffix}'):
      return class_fn(self, *args, **kwargs)

  return wrapped


@contextlib.contextmanager
def override_named_call(enable: bool = True):
  """Enables (or disables) named calls inside a ``with`` block.

  >>> from flax import linen as nn
  >>> with nn.override_named_call(False):
  ...   pass
  """
  old = context.named_call
  context.named_call = enable
  try:
    yield
  finally:
    context.named_call = old


def run_interceptors(orig_method, module, *args, **kwargs):
  """Calls ``orig_method`` on ``module`` through the installed method
  interceptors (the first installed runs outermost)."""
  from flax.linen._functional import InterceptorContext

  method_name = _get_fn_name(orig_method)
  fun = functools.partial(orig_method, module)
  # Interceptors see the method bound to the Module.
  ctx = InterceptorContext(module, method_name, fun)

  def wrap(interceptor, next_fun):
    def wrapped(*args, **kwargs):
      return interceptor(next_fun, args, kwargs, ctx)

    return wrapped

  # The interceptor installed first is the outermost one.
  for interceptor in reversed(context.interceptor_stack):
    fun = wrap(interceptor, fun)
  return fun(*args, **kwargs)
