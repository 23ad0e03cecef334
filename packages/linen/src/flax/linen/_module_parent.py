"""``Module.parent``: a data descriptor keeping a weak link to a parent Module.

Every Linen Module class holds a :class:`ParentDescriptor` under ``parent``.
The value lives in the instance's ``_parent_ref`` slot: a ``weakref.ref``
when the parent is a Module (so a child never keeps its parent alive), the
value itself otherwise (a ``Scope``, ``None`` or the "take it from the call
stack" sentinel).

>>> import weakref
>>> from flax import linen as nn
>>> class Child(nn.Module):
...   pass
>>> type(Child.__dict__['parent']).__name__
'ParentDescriptor'
>>> child = Child(parent=None)
>>> child.parent is None, vars(child)['_parent_ref'] is None
(True, True)
"""

import weakref

# The class whose instances are held weakly; set by ``flax.linen.module``
# once ``ModuleBase`` exists (this module is imported before it).
_weak_types: tuple = ()


def register_weak_parent_type(cls) -> None:
  """Makes instances of ``cls`` be stored as weak references."""
  global _weak_types
  _weak_types = (*_weak_types, cls)


class ParentDescriptor:
  """Stores a Module's parent in ``_parent_ref``, weakly for Modules.

  Reading ``parent`` on the class gives ``None``; on an instance it gives
  the parent (``None`` once a weakly held parent Module has been
  collected).

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class Inner(nn.Module):
  ...   @nn.compact
  ...   def __call__(self, x):
  ...     return x * self.param('w', jax.nn.initializers.ones, x.shape[-1:])
  >>> class Outer(nn.Module):
  ...   @nn.compact
  ...   def __call__(self, x):
  ...     inner = Inner()
  ...     print(type(vars(inner)['_parent_ref']).__name__,
  ...           inner.parent is self)
  ...     return inner(x)
  >>> _ = Outer().init(jax.random.key(0), jnp.ones(3))
  ReferenceType True
  >>> print(Inner.parent)
  None
  """

  def __get__(self, obj, objtype=None):
    if obj is None:
      return None
    try:
      ref = obj.__dict__['_parent_ref']
    except KeyError:
      raise AttributeError(
        f"'{type(obj).__name__}' object has no attribute '_parent_ref'"
      ) from None
    if type(ref) is weakref.ref:
      return ref()
    return ref

  def __set__(self, obj, value):
    if isinstance(value, _weak_types):
      value = weakref.ref(value)
    obj.__dict__['_parent_ref'] = value


ParentDescriptor.__module__ = 'flax.linen.module'
