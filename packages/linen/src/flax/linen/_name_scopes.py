"""``nn.compact_name_scope``: a method whose submodules get their own scope.

Submodules created inside a method decorated with
:func:`compact_name_scope` are named under the method's name (``encode/
Dense_0``), as if the method were a Module of its own; variables declared
directly with ``self.param`` / ``self.variable`` stay on the Module.
"""

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from flax import errors
from flax.linen._method_wrapping import compact
from flax.linen.module import Module

_CallableT = TypeVar('_CallableT', bound=Callable)


class CompactNameScope(Module):
  """The Module that gives a ``compact_name_scope`` method its name scope.

  Calling it runs ``fn(module_fn(), *args, **kwargs)`` as a compact method
  of this Module, so the submodules ``fn`` creates become its children.

  Attributes:
    fn: the undecorated method.
    module_fn: returns the Module the method belongs to.
  """

  fn: Callable
  module_fn: Callable[[], Module]

  @compact
  def __call__(self, *args, **kwargs) -> Any:
    return self.fn(self.module_fn(), *args, **kwargs)


CompactNameScope.__module__ = 'flax.linen.module'


def compact_name_scope(fun: _CallableT) -> _CallableT:
  """Makes the submodules created in method ``fun`` live under its name.

  Unlike ``nn.compact``, several methods of one Module may use it, and the
  Module may also have a ``setup``. Each call of the method reuses the
  same names, so calling it twice shares the submodules.

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class Linear(nn.Module):
  ...   features: int
  ...   @nn.compact
  ...   def __call__(self, x):
  ...     init = jax.nn.initializers.lecun_normal()
  ...     w = self.param('kernel', init, (x.shape[-1], self.features))
  ...     return x @ w
  >>> class AutoEncoder(nn.Module):
  ...   @nn.compact_name_scope
  ...   def encode(self, x):
  ...     return Linear(3)(x)
  ...   @nn.compact_name_scope
  ...   def decode(self, x):
  ...     return Linear(2)(x)
  ...   def __call__(self, x):
  ...     return self.decode(self.encode(x))
  >>> v = AutoEncoder().init(jax.random.key(0), jnp.ones(2))
  >>> jax.tree_util.tree_map(jnp.shape, v)['params']['encode']
  {'Linear_0': {'kernel': (2, 3)}}

  Args:
    fun: a Module method.

  Returns:
    The decorated method.
  """
  name = fun.__name__

  @functools.wraps(fun)
  def wrapped(self, *args, **kwargs):
    if self.scope is None:
      raise errors.CallCompactUnboundModuleError()
    self._try_setup()
    # A fresh scope Module per call, on the reused child scope ``name``:
    # names restart, variables and PRNG counters carry over.
    child_scope = self.scope.push(name, reuse=True)
    scope_module = CompactNameScope(
      fun, lambda: self, name=name, parent=child_scope
    )
    return scope_module(*args, **kwargs)

  wrapped.compact_name_scope = True  # type: ignore[attr-defined]
  # Not wrapped as a Module method: the call shows up as a call of the
  # CompactNameScope (e.g. in ``nn.tabulate``), not of this Module.
  wrapped.nowrap = True  # type: ignore[attr-defined]
  return wrapped  # type: ignore[return-value]
