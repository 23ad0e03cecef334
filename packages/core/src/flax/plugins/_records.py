"""Records that plugin hooks return: small tuples of import strings."""

import importlib
import re
from typing import Any, NamedTuple


def import_module(module_name: str):
  """Imports ``module_name`` after its parent packages, outermost first.

  Python takes a submodule's import lock before importing its parent. When
  one thread runs a package's ``__init__`` (which imports its submodules)
  while another asks for one of those submodules directly, each then holds a
  lock the other waits for, and the import fails with a deadlock error.
  Importing the parents first means a thread only ever waits for a package
  while holding none of its submodules, so concurrent first uses of
  lazily resolved names are safe.
  """
  parts = module_name.split('.')
  for i in range(1, len(parts)):
    importlib.import_module('.'.join(parts[:i]))
  return importlib.import_module(module_name)


def load_target(target: str) -> Any:
  """Imports ``'package.module:attr.path'`` (or a bare module path)."""
  module_name, _, attr_path = target.partition(':')
  obj = import_module(module_name)
  for part in filter(None, attr_path.split('.')):
    obj = getattr(obj, part)
  return obj


class Export(NamedTuple):
  """A name that a plugin adds to a Flax namespace.

  Attributes:
    namespace: the module the name appears in, e.g. ``'flax.nnx'``.
    name: the attribute name, e.g. ``'Linear'``.
    target: where the object lives, ``'module:attr'``, or a module path to
      export a whole module.
  """

  namespace: str
  name: str
  target: str

  def load(self) -> Any:
    return load_target(self.target)


class Backend(NamedTuple):
  """A checkpoint or partitioning backend.

  Attributes:
    name: the name users select it by, e.g. ``'msgpack'``.
    target: ``'module:attr'`` of the backend object or factory.
    priority: higher wins when nothing selects a backend explicitly.
  """

  name: str
  target: str
  priority: int = 0

  def load(self) -> Any:
    return load_target(self.target)


class StateHandler(NamedTuple):
  """State-dict conversion for a custom type.

  Attributes:
    type: ``'module:Class'`` of the type handled.
    to_state_dict: ``'module:function'`` turning an instance into a dict.
    from_state_dict: ``'module:function'`` restoring ``(target, state)``.
  """

  type: str
  to_state_dict: str
  from_state_dict: str


class ConfigOption(NamedTuple):
  """A configuration flag that a package adds to ``flax.config``."""

  name: str
  default: Any
  help: str = ''


_DOTTED = re.compile(r'[A-Za-z_]\w*(\.[A-Za-z_]\w*)*')


def _target_problem(field, value):
  if not isinstance(value, str):
    return f'{field} must be a str, got {type(value).__name__}'
  module, sep, attr = value.partition(':')
  if not _DOTTED.fullmatch(module) or (sep and not _DOTTED.fullmatch(attr)):
    return f"{field} {value!r} is not 'package.module' or 'package.module:attr'"
  return None


def _name_problem(field, value, dotted=False):
  if not isinstance(value, str):
    return f'{field} must be a str, got {type(value).__name__}'
  if not (_DOTTED.fullmatch(value) if dotted else value.isidentifier()):
    return f'{field} {value!r} is not a valid Python name'
  return None


def record_problem(record):
  """Why ``record`` cannot be used, or None if its fields are valid."""
  checks = []
  if isinstance(record, Export):
    checks = [
      _name_problem('namespace', record.namespace, dotted=True),
      _name_problem('name', record.name),
      _target_problem('target', record.target),
    ]
  elif isinstance(record, Backend):
    checks = [
      None
      if isinstance(record.name, str) and record.name.strip()
      else f'name must be a non-empty str, got {record.name!r}',
      _target_problem('target', record.target),
    ]
    if type(record.priority) not in (int, float):  # bool is refused too
      checks.append(
        f'priority must be a number, got {type(record.priority).__name__}'
      )
  elif isinstance(record, StateHandler):
    checks = [
      _target_problem('type', record.type),
      _target_problem('to_state_dict', record.to_state_dict),
      _target_problem('from_state_dict', record.from_state_dict),
    ]
  elif isinstance(record, ConfigOption):
    checks = [_name_problem('name', record.name)]
    if not isinstance(record.help, str):
      checks.append(f'help must be a str, got {type(record.help).__name__}')
  return next((c for c in checks if c), None)
