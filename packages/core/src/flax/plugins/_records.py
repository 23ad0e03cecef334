"""Records that plugin hooks return: small tuples of import strings."""

import importlib
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
