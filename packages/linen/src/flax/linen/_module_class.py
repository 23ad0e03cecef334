"""Class-level machinery of Linen Modules and Flax's private helpers.

What ``Module.__init_subclass__`` adds to each subclass (how ``parent`` and
``name`` show in signatures, the ``hash()`` guard for bound Modules, the
list of ``compact_name_scope`` methods), and helpers Flax offers under
private names in ``flax.linen.module``.
"""

import functools
import inspect
from typing import Any

import jax

from flax.linen import _module_tree
from flax.linen import kw_only_dataclasses


def _compact_name_scope_methods(cls) -> tuple:
  """The names of ``cls``'s ``@nn.compact_name_scope`` methods, sorted."""
  flags = {}
  for klass in reversed(cls.__mro__):
    for key, value in vars(klass).items():
      flags[key] = inspect.isfunction(value) and getattr(
        value, 'compact_name_scope', False
      )
  return tuple(sorted(k for k, flag in flags.items() if flag))


def _freeze_attr(val: Any) -> Any:
  """Lists become tuples and dicts FrozenDicts, recursively."""
  return _module_tree.freeze_attr(val)


def _get_local_method_names(cls: Any, exclude=()) -> tuple:
  """The names of the methods ``cls`` itself defines (not inherited ones),
  without static/class methods, properties and the names in ``exclude``."""
  exclude = set(exclude)
  return tuple(
    name
    for name, value in vars(cls).items()
    if name not in exclude
    and callable(value)
    and not isinstance(value, (staticmethod, classmethod, type))
  )


def _get_suffix_value_pairs(tree_or_leaf: Any) -> list:
  """``[(suffix, leaf)]`` for the leaves (Modules and None included) of a
  tree: the suffix joins the keys with ``_`` (``'_1_a'``; ``''`` for a lone
  leaf, or for an empty container given alone)."""
  leaves, treedef = jax.tree_util.tree_flatten_with_path(
    tree_or_leaf, is_leaf=_is_suffix_leaf
  )
  if not leaves and treedef.num_nodes == 1:
    return [('', tree_or_leaf)]
  return [
    (''.join(f'_{_path_key_name(k)}' for k in path), leaf)
    for path, leaf in leaves
  ]


def _is_suffix_leaf(x) -> bool:
  return x is None or _module_tree.is_module(x)


def _path_key_name(key) -> str:
  for attr in ('key', 'idx', 'name'):
    if hasattr(key, attr):
      return str(getattr(key, attr))
  return str(key)


def _present_trailing_fields(cls) -> None:
  """Shows ``parent``/``name`` as ordinary trailing parameters.

  They are keyword-only in the generated ``__init__``; ``dataclasses.fields``
  and ``inspect.signature`` show them as plain parameters after the
  Module's own fields (keyword-only when those are).
  """
  fields = cls.__dict__['__dataclass_fields__']
  for name in kw_only_dataclasses.TRAILING_FIELDS:
    fields[name].kw_only = False
  init = cls.__dict__['__init__']
  sig = inspect.signature(init)
  params = list(sig.parameters.values())
  own = [
    p for p in params[1:] if p.name not in kw_only_dataclasses.TRAILING_FIELDS
  ]
  if not any(p.kind is inspect.Parameter.KEYWORD_ONLY for p in own):
    params = [
      p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
      if p.name in kw_only_dataclasses.TRAILING_FIELDS
      else p
      for p in params
    ]
  init.__signature__ = sig.replace(parameters=params)


_HASH_BOUND_MESSAGE = "Can't call __hash__ on modules that hold variables."


def _guard_hash(cls) -> None:
  """Makes ``hash()`` of a Module bound to variables a TypeError."""
  hash_fn = cls.__dict__.get('__hash__')
  if hash_fn is None or getattr(hash_fn, '_unbound_only', False):
    return

  @functools.wraps(hash_fn)
  def __hash__(self):
    if self.scope is not None:
      raise TypeError(_HASH_BOUND_MESSAGE)
    return hash_fn(self)

  __hash__._unbound_only = True
  type.__setattr__(cls, '__hash__', __hash__)
