"""Frozen dataclasses that are JAX pytrees.

>>> import jax
>>> from flax import struct
>>> @struct.dataclass
... class Model:
...   params: dict
...   apply_fn: object = struct.field(pytree_node=False)
>>> model = Model({'w': 1.0}, apply_fn=print)
>>> jax.tree_util.tree_leaves(model)
[1.0]
>>> model.replace(params={'w': 2.0}).params
{'w': 2.0}
"""

import dataclasses
import functools
from typing import TypeVar, dataclass_transform

import jax

from flax.core import state_dict as _state_dict

__all__ = ['PyTreeNode', 'dataclass', 'field']

_T = TypeVar('_T')


def field(pytree_node: bool = True, *, metadata=None, **kwargs):
  """A dataclass field, that is a pytree child unless ``pytree_node=False``.

  A field with ``pytree_node=False`` is static: it is kept in the pytree's
  auxiliary data, so JAX transforms neither trace nor differentiate it (use
  it for functions, modules, shapes, ...).

  Args:
    pytree_node: whether the field's value is part of the pytree.
    metadata: extra dataclass metadata.
    **kwargs: passed on to ``dataclasses.field`` (``default``,
      ``default_factory``, ``kw_only``, ...).
  """
  return dataclasses.field(
    metadata={**(metadata or {}), 'pytree_node': pytree_node}, **kwargs
  )


def _replace(self, **updates):
  """Returns a copy of the dataclass with some fields replaced."""
  return dataclasses.replace(self, **updates)


def _state_dict_handlers(cls, data_fields):
  def to_state_dict(x):
    return {
      name: _state_dict.to_state_dict(getattr(x, name)) for name in data_fields
    }

  def from_state_dict(x, state):
    state = dict(state)
    updates = {}
    for name in data_fields:
      if name not in state:
        raise ValueError(
          f'Missing field {name} in state dict while restoring an instance '
          f'of {cls.__name__}, at path {_state_dict.current_path()}'
        )
      updates[name] = _state_dict.from_state_dict(
        getattr(x, name), state.pop(name), name=name
      )
    if state:
      names = ','.join(state.keys())
      raise ValueError(
        f'Unknown field(s) "{names}" in state dict while restoring an '
        f'instance of {cls.__name__} at path {_state_dict.current_path()}'
      )
    return x.replace(**updates)

  return to_state_dict, from_state_dict


@dataclass_transform(field_specifiers=(field,))
def dataclass(clz: _T = None, **kwargs) -> _T:
  """Makes a frozen dataclass that is registered as a JAX pytree.

  Fields are pytree children, except those declared with
  ``struct.field(pytree_node=False)``, which are static. Instances are
  immutable; ``obj.replace(**updates)`` returns a changed copy. The class is
  also registered for ``flax.serialization`` (its state dict holds the
  pytree fields). Applying it twice is harmless.

  >>> import jax, jax.numpy as jnp
  >>> from flax import struct
  >>> @struct.dataclass
  ... class Point:
  ...   x: float
  ...   y: float
  >>> grads = jax.grad(lambda p: p.x * p.y)(Point(jnp.array(2.0), 3.0))
  >>> float(grads.x), float(grads.y)
  (3.0, 2.0)

  Args:
    clz: the class.
    **kwargs: passed on to ``dataclasses.dataclass`` (``frozen`` defaults to
      True; e.g. ``kw_only=True``).

  Returns:
    The dataclass.
  """
  if clz is None:
    return functools.partial(dataclass, **kwargs)
  if '_flax_dataclass' in clz.__dict__:
    return clz
  kwargs.setdefault('frozen', True)
  data_clz = dataclasses.dataclass(**kwargs)(clz)
  data_fields, meta_fields, drop_fields = [], [], []
  for info in dataclasses.fields(data_clz):
    if not info.init:
      drop_fields.append(info.name)
    elif info.metadata.get('pytree_node', True):
      data_fields.append(info.name)
    else:
      meta_fields.append(info.name)
  data_clz.replace = _replace
  jax.tree_util.register_dataclass(
    data_clz, data_fields, meta_fields, drop_fields
  )
  _state_dict.register_serialization_state(
    data_clz, *_state_dict_handlers(data_clz, data_fields), override=True
  )
  data_clz._flax_dataclass = True
  return data_clz


TNode = TypeVar('TNode', bound='PyTreeNode')


@dataclass_transform(field_specifiers=(field,))
class PyTreeNode:
  """Base class of pytree dataclasses: subclasses are ``struct.dataclass``.

  Keyword arguments of the class statement go to ``dataclasses.dataclass``:

  >>> from typing import Any
  >>> import jax
  >>> from flax import struct
  >>> class Model(struct.PyTreeNode):
  ...   params: Any
  ...   apply_fn: Any = struct.field(pytree_node=False, default=None)
  >>> jax.tree_util.tree_leaves(Model(params=[1, 2]))
  [1, 2]
  """

  def __init_subclass__(cls, **kwargs):
    # Let other bases (e.g. ``typing.Generic``) set up the subclass too;
    # the keyword arguments are for ``dataclasses.dataclass``.
    super().__init_subclass__()
    dataclass(cls, **kwargs)

  def __init__(self, *args, **kwargs):
    # Replaced by the dataclass __init__ of each subclass; declared for type
    # checkers.
    del args, kwargs

  def replace(self: TNode, **overrides) -> TNode:
    """Returns a copy with some fields replaced."""
    return dataclasses.replace(self, **overrides)
