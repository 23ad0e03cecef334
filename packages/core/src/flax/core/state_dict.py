"""State dicts: nested dicts of string keys that describe a Python object.

A type is turned into a state dict and restored from one by the two
functions registered for it with :func:`register_serialization_state`.
Built in: ``dict`` and ``FrozenDict`` (keys become strings), ``list`` and
``tuple`` (``{'0': ..., '1': ...}``) and named tuples (``{field: ...}``).
``flax.struct`` dataclasses register themselves. Other objects (arrays,
numbers, ``None``, ...) are their own state. Types registered by plugins
through the ``flax_state_handlers`` hook are found on first use.

>>> from flax.core import state_dict
>>> state_dict.to_state_dict({'layers': [1, 2]})
{'layers': {'0': 1, '1': 2}}
>>> state_dict.from_state_dict({'layers': [0, 0]},
...                            {'layers': {'0': 5, '1': 6}})
{'layers': [5, 6]}
"""

import contextlib
import threading
from typing import Any, Callable

from flax.core.frozen_dict import FrozenDict

__all__ = [
  'current_path',
  'from_state_dict',
  'is_serializable',
  'register_serialization_state',
  'to_state_dict',
]


class _NamedTuple:
  """Registry key standing for every named tuple type."""


# type -> (to_state_dict, from_state_dict)
_REGISTRY: dict[type, tuple[Callable, Callable]] = {}
# Types no plugin handles, for the registry they were looked up in.
_no_plugin_handler = [None, set()]


class _PathContext(threading.local):
  def __init__(self):
    self.path = []


_context = _PathContext()


def current_path() -> str:
  """Path (``'.'``-rooted, ``/``-separated) of the value being restored.

  It is meant for error messages of ``from_state_dict`` handlers, e.g.
  ``'./params/Dense_0/kernel'``.
  """
  return '/'.join(_context.path)


@contextlib.contextmanager
def _record_path(name):
  path = _context.path
  depth = len(path)
  path.append(name)
  try:
    yield
  finally:
    del path[depth:]


def _is_namedtuple(x) -> bool:
  return isinstance(x, tuple) and hasattr(type(x), '_fields')


def _type_key(target):
  return _NamedTuple if _is_namedtuple(target) else type(target)


def register_serialization_state(
  ty,
  ty_to_state_dict: Callable[[Any], Any],
  ty_from_state_dict: Callable[[Any, Any], Any],
  override: bool = False,
) -> None:
  """Registers the state-dict conversion of a type.

  Args:
    ty: the type.
    ty_to_state_dict: ``fn(obj) -> state_dict``.
    ty_from_state_dict: ``fn(target, state_dict) -> obj``: returns a copy of
      ``target`` whose content comes from ``state_dict``.
    override: replace an existing registration instead of raising.

  Raises:
    ValueError: if ``ty`` is registered already and ``override`` is False.
  """
  if ty in _REGISTRY and not override:
    raise ValueError(
      f'a serialization handler for "{ty.__name__}" is already registered'
    )
  _REGISTRY[ty] = (ty_to_state_dict, ty_from_state_dict)


def _plugin_handler(ty):
  """Registers ``ty`` from a plugin's state handler; True if one exists."""
  from flax import plugins

  name = f'{ty.__module__}:{ty.__qualname__}'
  reg = plugins.registry()
  if _no_plugin_handler[0] is not reg:
    _no_plugin_handler[:] = [reg, set()]
  if name in _no_plugin_handler[1]:
    return False
  # First-party handlers answer without importing third-party plugins.
  record = reg.state_handler(name)
  if record is None:
    _no_plugin_handler[1].add(name)
    return False
  from flax.plugins import load_target

  register_serialization_state(
    ty,
    load_target(record.to_state_dict),
    load_target(record.from_state_dict),
    override=True,
  )
  return True


def _handlers(target):
  ty = _type_key(target)
  handlers = _REGISTRY.get(ty)
  if handlers is None and ty.__module__ not in _PLAIN_MODULES:
    if _plugin_handler(ty):
      handlers = _REGISTRY[ty]
  return handlers


# Modules whose types never have plugin handlers (skips the plugin lookup
# for the common leaves: arrays, numbers, strings, None).
_PLAIN_MODULES = frozenset(
  {
    'builtins',
    'numpy',
    'jaxlib.xla_extension',
    'jaxlib._jax',
    'jax._src.array',
    'jax._src.core',
  }
)


def is_serializable(target) -> bool:
  """Whether ``target``'s type has state-dict handlers."""
  return _handlers(target) is not None


def to_state_dict(target) -> Any:
  """Returns the state dict of ``target``.

  Objects of unregistered types (arrays, numbers, strings, ...) are
  returned unchanged.

  >>> from flax.core.state_dict import to_state_dict
  >>> to_state_dict((1, {'a': 2}))
  {'0': 1, '1': {'a': 2}}
  """
  handlers = _handlers(target)
  if handlers is None:
    return target
  state = handlers[0](target)
  if isinstance(state, dict):
    for key in state:
      if not isinstance(key, str):
        raise TypeError(
          f'A state dict must only have string keys; the handler of '
          f'{type(target).__name__} returned the key {key!r}.'
        )
  return state


def from_state_dict(target, state, name: str = '.'):
  """Restores ``target`` from ``state``.

  Args:
    target: an object with the structure to restore; it is not changed.
    state: a state dict, e.g. from :func:`to_state_dict` or a checkpoint.
    name: the name of ``target`` in the path that error messages print.

  Returns:
    A copy of ``target`` with the content of ``state``. For an unregistered
    type, ``state`` itself.

  Raises:
    ValueError: when ``state`` lacks entries that ``target`` has (or, for
      struct dataclasses and named tuples, has unknown ones); the message
      gives the path.
  """
  handlers = _handlers(target)
  if handlers is None:
    return state
  with _record_path(name):
    return handlers[1](target, state)


# -- built-in handlers ------------------------------------------------------


def _check_is_dict(state, what):
  if not isinstance(state, (dict, FrozenDict)):
    raise ValueError(
      f'Expected a state dict to restore {what} at path {current_path()}, '
      f'got {type(state).__name__}: {state!r:.80}'
    )


def _list_state_dict(xs):
  return {str(i): to_state_dict(x) for i, x in enumerate(xs)}


def _restore_list(xs, state):
  if isinstance(state, (list, tuple)):
    # Some checkpoint backends give sequences back as sequences.
    state = {str(i): x for i, x in enumerate(state)}
  _check_is_dict(state, 'a list')
  if len(state) != len(xs):
    raise ValueError(
      'The size of the list and the state dict do not match, got '
      f'{len(xs)} and {len(state)} at path {current_path()}'
    )
  missing = [str(i) for i in range(len(xs)) if str(i) not in state]
  if missing:
    raise ValueError(
      f'The state dict of a list lacks the entries {missing} at path '
      f'{current_path()}'
    )
  return [
    from_state_dict(x, state[str(i)], name=str(i)) for i, x in enumerate(xs)
  ]


def _restore_tuple(xs, state):
  return tuple(_restore_list(xs, state))


def _dict_state_dict(xs):
  keys = {str(k) for k in xs}
  if len(keys) != len(xs):
    raise ValueError(
      f'Dict keys do not have a unique string representation: {list(xs.keys())}'
    )
  return {str(k): to_state_dict(v) for k, v in xs.items()}


def _restore_dict(xs, state):
  _check_is_dict(state, 'a dict')
  missing = set(map(str, xs.keys())).difference(state.keys())
  if missing:
    raise ValueError(
      'The target dict keys and state dict keys do not match, target dict '
      f'contains keys {missing} which are not present in state dict at '
      f'path {current_path()}'
    )
  return {
    k: from_state_dict(v, state[str(k)], name=str(k)) for k, v in xs.items()
  }


def _restore_frozen_dict(xs, state):
  return FrozenDict(_restore_dict(xs, state), __unsafe_skip_copy__=True)


def _namedtuple_state_dict(nt):
  return {field: to_state_dict(getattr(nt, field)) for field in nt._fields}


def _restore_namedtuple(xs, state):
  _check_is_dict(state, f'a {type(xs).__name__}')
  if set(state.keys()) == {'name', 'fields', 'values'}:
    # Old layout: {'name': ..., 'fields': {'0': f0, ...}, 'values': {...}}.
    state = {
      state['fields'][str(i)]: state['values'][str(i)]
      for i in range(len(state['fields']))
    }
  state_keys = set(state.keys())
  fields = set(xs._fields)
  if state_keys != fields:
    raise ValueError(
      'The field names of the state dict and the named tuple do not match, '
      f'got {state_keys} and {fields} at path {current_path()}'
    )
  values = {
    k: from_state_dict(getattr(xs, k), v, name=k) for k, v in state.items()
  }
  return type(xs)(**values)


# Flax's name of the registry (flax.serialization re-exports it, with the
# built-in handlers, for code written against Flax's private names).
_STATE_DICT_REGISTRY = _REGISTRY

register_serialization_state(dict, _dict_state_dict, _restore_dict)
register_serialization_state(FrozenDict, _dict_state_dict, _restore_frozen_dict)
register_serialization_state(list, _list_state_dict, _restore_list)
register_serialization_state(tuple, _list_state_dict, _restore_tuple)
register_serialization_state(
  _NamedTuple, _namedtuple_state_dict, _restore_namedtuple
)
