"""Helpers that walk Module attributes: containers of submodules, reprs."""

import dataclasses

from flax.core.frozen_dict import FrozenDict


def is_module(x) -> bool:
  from flax.linen.module import Module

  return isinstance(x, Module)


def map_modules_with_suffix(fn, tree, suffix=''):
  """Maps ``fn(suffix, module)`` over the Modules inside lists/tuples/dicts.

  The suffix of an item is built from its container keys, e.g. ``'_0'`` for
  the first item of a list and ``'_a_1'`` for ``{'a': [x, y]}['a'][1]``.
  Other values are returned unchanged.
  """
  if is_module(tree):
    return fn(suffix, tree)
  if isinstance(tree, (dict, FrozenDict)):
    # Visited in pytree (sorted key) order; the result keeps the dict's.
    mapped = {
      k: map_modules_with_suffix(fn, tree[k], f'{suffix}_{k}')
      for k in _pytree_key_order(tree)
    }
    items = {k: mapped[k] for k in tree}
    return type(tree)(items) if isinstance(tree, FrozenDict) else items
  if isinstance(tree, list):
    return [
      map_modules_with_suffix(fn, v, f'{suffix}_{i}')
      for i, v in enumerate(tree)
    ]
  if isinstance(tree, tuple):
    values = [
      map_modules_with_suffix(fn, v, f'{suffix}_{i}')
      for i, v in enumerate(tree)
    ]
    if hasattr(tree, '_fields'):
      return type(tree)(*values)
    return tuple(values)
  return tree


def _pytree_key_order(tree) -> list:
  try:
    return sorted(tree)
  except TypeError:
    return list(tree)


def map_modules(fn, tree):
  """Maps ``fn(module)`` over the Modules inside nested containers."""
  return map_modules_with_suffix(lambda _, m: fn(m), tree)


def freeze_attr(value):
  """Makes container attributes immutable: lists become tuples, dicts
  become FrozenDicts (so Modules holding them stay hashable)."""
  if isinstance(value, (dict, FrozenDict)):
    return FrozenDict({k: freeze_attr(v) for k, v in value.items()})
  if isinstance(value, tuple):
    if hasattr(value, '_fields') or type(value).__name__ == 'PartitionSpec':
      return type(value)(*[freeze_attr(v) for v in value])
    return tuple(freeze_attr(v) for v in value)
  if isinstance(value, list):
    return tuple(freeze_attr(v) for v in value)
  return value


def _indent(text: str, spaces: int) -> str:
  pad = ' ' * spaces
  lines = text.split('\n')
  return '\n'.join(pad + line for line in lines[:-1]) + '\n'


def sorted_items(x):
  """The items of mapping ``x``, sorted by key."""
  return sorted(x.items(), key=lambda item: item[0])


def attr_repr(value) -> str:
  if is_module(value):
    return module_repr(value)
  if callable(value):
    name = getattr(value, '__name__', None)
    if isinstance(name, str) and name:
      return name
  return repr(value)


def module_repr(module, num_spaces: int = 4) -> str:
  """Flax's Module repr: ``Cls(\\n    # attributes\\n    a = 1\\n)``."""
  cls = type(module)
  text = ''
  names = [
    f.name
    for f in (dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ())
    if f.name not in ('parent', 'name') and f.repr
  ]
  if names:
    text += '# attributes\n'
    for name in names:
      text += f'{name} = {attr_repr(module.__dict__.get(name))}\n'
  state = module.__dict__.get('_state')
  children = {}
  if state is not None:
    children = {k: v for k, v in state.children.items() if is_module(v)}
  if children:
    text += '# children\n'
    for name, child in children.items():
      text += f'{name} = {module_repr(child, num_spaces)}\n'
  if text:
    return f'{cls.__name__}(\n{_indent(text, num_spaces)})'
  return f'{cls.__name__}()'
