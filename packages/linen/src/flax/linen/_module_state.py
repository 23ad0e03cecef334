"""Bookkeeping of Linen Modules that is not a Module method.

The per-class field-name caches, the default of ``Module.parent`` (a
sentinel meaning "take the parent from the call stack") and the mutable
per-instance state a Module keeps beside its dataclass fields.

>>> from flax.linen._module_state import SetupState
>>> SetupState.DONE > SetupState.NEW
True
"""

import dataclasses
import enum
import operator


def _init_field_names(cls) -> tuple:
  """The names of ``cls``'s ``__init__`` fields, ``parent`` and ``name`` too.

  Computed once per class and kept on the class itself (so classes made
  on the fly can still be collected).
  """
  names = cls.__dict__.get('_flax_init_field_names')
  if names is None:
    names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    type.__setattr__(cls, '_flax_init_field_names', names)
  return names


def _config_field_names(cls) -> tuple:
  """The ``__init__`` fields of ``cls`` other than ``parent`` and ``name``."""
  names = cls.__dict__.get('_flax_config_field_names')
  if names is None:
    names = tuple(
      n for n in _init_field_names(cls) if n not in ('parent', 'name')
    )
    type.__setattr__(cls, '_flax_config_field_names', names)
  return names


def _config_field_values(module) -> tuple:
  """The values of ``module``'s config fields (one C-level getter per class)."""
  cls = type(module)
  getter = cls.__dict__.get('_flax_config_field_getter')
  if getter is None:
    names = _config_field_names(cls)
    if len(names) > 1:
      getter = operator.attrgetter(*names)
    else:  # attrgetter of one name gives the value, not a tuple
      getter = lambda m, names=names: tuple(getattr(m, n) for n in names)  # noqa: E731
    type.__setattr__(cls, '_flax_config_field_getter', getter)
  return getter(module)


class _Sentinel:
  """Default of ``Module.parent``: take the parent from the call stack."""

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  def __reduce__(self):
    return (_unspecified, ())


def _unspecified():
  return _unspecified_parent


_unspecified_parent = _Sentinel()


class SetupState(enum.IntEnum):
  NEW = 0  # setup has not run.
  TRANSFORMED = 1  # setup ran outside a lifted transform; rerun it inside.
  DONE = 2  # setup ran.


@dataclasses.dataclass
class _ModuleInternalState:
  """Mutable bookkeeping of a Module instance (not part of its fields)."""

  in_compact_method: bool = False
  in_setup: bool = False
  setup_called: SetupState = SetupState.NEW
  is_initialized: bool = False
  autoname_cursor: dict = dataclasses.field(default_factory=dict)
  children: dict = dataclasses.field(default_factory=dict)
  # On the root Module of a bound tree: ``{id(orphan): (orphan, adopted
  # copy)}`` for the parentless Modules its tree adopted.
  adoptions: dict = dataclasses.field(default_factory=dict)

  def reset(self):
    self.in_compact_method = False
    self.in_setup = False
    self.autoname_cursor = {}

  def export(self) -> '_ModuleInternalState':
    """State handed to the clone that runs inside a lifted transform."""
    setup = self.setup_called
    if setup == SetupState.DONE:
      setup = SetupState.TRANSFORMED
    return _ModuleInternalState(
      in_compact_method=self.in_compact_method,
      in_setup=self.in_setup,
      setup_called=setup,
      is_initialized=self.is_initialized,
      autoname_cursor=dict(self.autoname_cursor),
    )

  def reimport(self, other: '_ModuleInternalState'):
    self.in_compact_method = other.in_compact_method
    self.in_setup = other.in_setup
    self.is_initialized = other.is_initialized
    self.autoname_cursor = dict(other.autoname_cursor)


_uninitialized_state = _ModuleInternalState()
