"""Global configuration flags of Flax.

Flags are read as attributes of ``flax.config`` and changed with
``flax.config.update``. Each flag can also be set before start-up with an
environment variable named like the flag in upper case (``FLAX_PROFILE``,
``NNX_GRAPH_MODE``, ...). Packages add flags of their own through the
``flax_config_options`` plugin hook, or with :func:`bool_flag` /
:func:`int_flag`.

>>> import flax
>>> flax.config.update('flax_return_frozendict', True)
>>> flax.config.flax_return_frozendict
True
>>> flax.config.update('flax_return_frozendict', False)
"""

import contextlib
import os
import threading
from typing import Any, Generic, NamedTuple, TypeVar

_T = TypeVar('_T')

_TRUE = frozenset({'y', 'yes', 't', 'true', 'on', '1'})
_FALSE = frozenset({'n', 'no', 'f', 'false', 'off', '0'})

# Other names a flag is known by (read and written as the target flag).
_ALIASES = {'flax_graph_mode': 'nnx_graph_mode'}


class Flag(NamedTuple):
  """A configuration flag: its name, default value and help text."""

  name: str
  default: Any
  help: str = ''


def static_bool_env(varname: str, default: bool) -> bool:
  """Reads a boolean from environment variable ``varname``.

  True values are y, yes, t, true, on and 1; false values are n, no, f,
  false, off and 0 (any case). An unset variable gives ``default``.

  >>> from flax.configurations import static_bool_env
  >>> static_bool_env('FLAX_SOME_UNSET_VARIABLE', True)
  True

  Raises:
    ValueError: for any other value.
  """
  raw = os.environ.get(varname)
  if raw is None:
    raw = str(default)
  low = raw.lower()
  if low in _TRUE:
    return True
  if low in _FALSE:
    return False
  raise ValueError(f'invalid truth value {raw!r} for environment {varname!r}')


def static_int_env(varname: str, default: int | None) -> int | None:
  """Reads an integer from environment variable ``varname``.

  An unset variable gives ``default``.

  >>> from flax.configurations import static_int_env
  >>> static_int_env('FLAX_SOME_UNSET_VARIABLE', None) is None
  True

  Raises:
    ValueError: if the value is not an integer.
  """
  raw = os.environ.get(varname)
  if raw is None:
    return default
  try:
    return int(raw)
  except ValueError:
    raise ValueError(
      f'invalid integer value {raw!r} for environment {varname!r}'
    ) from None


def _initial_value(flag: Flag) -> Any:
  """The value of a new flag: from its environment variable or default."""
  varname = flag.name.upper()
  if isinstance(flag.default, bool):
    return static_bool_env(varname, flag.default)
  if flag.default is None or isinstance(flag.default, int):
    return static_int_env(varname, flag.default)
  return os.environ.get(varname, flag.default)


def _flag_property(name: str) -> property:
  def get(self):
    try:
      return self._values[name]
    except KeyError:
      # Defined once, but no longer among the values (e.g. a test swapped
      # ``config._values`` for a fresh dict).
      raise LookupError(f'Unrecognized config option: {name}') from None

  get.__name__ = name
  return property(get)


class Config:
  """Holds the values of every configuration flag.

  Flags are read-only properties (``config.flax_profile``); change them
  with :meth:`update` or, for a block, :meth:`temp_flip_flag`. Values come
  from, in order: ``update``, the environment variable named like the flag
  in upper case, the flag's default. The flags that exist are the keys of
  ``_values``: swapping it for an empty dict (as tests do with
  ``mock.patch.object``) lets flags be defined afresh.
  """

  # Older name of ``nnx_graph_mode`` (read and updated as that flag).
  flax_graph_mode = property(lambda self: self._values['nnx_graph_mode'])

  def __init__(self, flags=None):
    self._lock = threading.RLock()
    self._flags = {}
    self._values = {}
    self._plugins_loaded = False
    for flag in _CORE_FLAGS if flags is None else flags:
      self.define(flag)

  def define(self, flag: Flag) -> None:
    """Adds a flag; its value is read from the environment if set there.

    Defining a flag again with the same default does nothing.

    Raises:
      ValueError: if the flag exists with another default.
    """
    with self._lock:
      known = self._flags.get(flag.name) if flag.name in self._values else None
      if known is not None:
        if known.default != flag.default:
          raise ValueError(
            f'Config flag {flag.name!r} is defined twice with different '
            f'defaults ({known.default!r} and {flag.default!r}).'
          )
        return
      self._register(flag, _initial_value(flag))

  def _register(self, flag: Flag, value: Any) -> None:
    with self._lock:
      self._flags[flag.name] = flag
      self._values[flag.name] = value
      if not isinstance(getattr(type(self), flag.name, None), property):
        setattr(type(self), flag.name, _flag_property(flag.name))

  def _add_option(self, flag: Flag, value: Any) -> None:
    """Adds a new flag with its value; used by ``bool_flag``/``int_flag``.

    Raises:
      RuntimeError: if a flag of that name exists.
    """
    with self._lock:
      if flag.name in self._values:
        raise RuntimeError(f'Config option {flag.name} already defined')
      self._register(flag, value)

  def _load_plugin_flags(self) -> None:
    with self._lock:
      if self._plugins_loaded:
        return
      self._plugins_loaded = True
      from flax import plugins

      for option in plugins.registry().config_options():
        self.define(Flag(option.name, option.default, option.help))

  def _canonical(self, name: str) -> str:
    name = _ALIASES.get(name, name)
    if name not in self._values:
      self._load_plugin_flags()
    return name

  def __getattr__(self, name):
    # Called only for names that are no flag property: aliases, flags a
    # plugin adds, unknown names.
    if name.startswith('_'):
      raise AttributeError(name)
    canonical = self._canonical(name)
    if canonical in self._values:
      return self._values[canonical]
    raise AttributeError(
      f'{type(self).__name__!r} object has no attribute {name!r}'
    )

  def update(self, name_or_holder, value, /) -> None:
    """Sets a flag (given by name or :class:`FlagHolder`) to ``value``.

    >>> import flax
    >>> from flax import configurations
    >>> flax.config.update(configurations.flax_profile, False)
    >>> flax.config.flax_profile
    False
    >>> flax.config.update('flax_profile', True)

    Raises:
      LookupError: if there is no such flag.
    """
    name = getattr(name_or_holder, 'name', name_or_holder)
    canonical = self._canonical(name)
    if canonical not in self._values:
      raise LookupError(f'Unrecognized config option: {name}')
    with self._lock:
      self._values[canonical] = value

  def _read(self, name: str) -> Any:
    """The value of flag ``name`` (a private reader, as in Flax 0.12.8).

    Raises:
      LookupError: if there is no such flag.
    """
    # Only flag names: an alias (``flax_graph_mode``) is unknown here.
    if name not in self._values:
      self._load_plugin_flags()
    if name not in self._values:
      raise LookupError(f'Unrecognized config option: {name}')
    return self._values[name]

  @contextlib.contextmanager
  def temp_flip_flag(self, var_name: str, var_value: bool):
    """Sets flag ``flax_<var_name>`` inside a ``with`` block.

    >>> import flax
    >>> with flax.config.temp_flip_flag('return_frozendict', True):
    ...   flax.config.flax_return_frozendict
    True

    Raises:
      AttributeError: if there is no flag ``flax_<var_name>``.
    """
    name = f'flax_{var_name}'
    old = getattr(self, name)
    self.update(name, var_value)
    try:
      yield
    finally:
      self.update(name, old)

  def flags(self) -> dict:
    """Returns a dict of every known flag and its current value."""
    self._load_plugin_flags()
    return dict(self._values)

  def __repr__(self):
    items = ', \n'.join(f'  {k}={v!r}' for k, v in self._values.items())
    return f'{type(self).__name__}(\n{items}\n)'


class FlagHolder(Generic[_T]):
  """A handle to one flag of ``flax.config``; read it with ``.value``.

  >>> from flax import configurations
  >>> configurations.flax_return_frozendict.value
  False

  Attributes:
    name: the flag's name.
  """

  def __init__(self, name: str, help: str):
    self.name = name
    self._help = help

  @property
  def value(self) -> _T:
    """The flag's current value."""
    return getattr(config, self.name)

  def __bool__(self):
    raise TypeError(
      f'bool() not supported for instances of type {type(self).__name__!r} '
      f'(did you mean to use {type(self).__name__!r}.value instead?)'
    )


def bool_flag(name: str, *, default: bool, help: str) -> FlagHolder[bool]:
  """Defines a boolean flag and returns a holder of it.

  Its initial value comes from the environment variable ``name.upper()``
  if set, else ``default``.

  >>> from flax import configurations
  >>> holder = configurations.bool_flag(
  ...     'my_doc_flag', default=False, help='An example.')
  >>> holder.name, holder.value
  ('my_doc_flag', False)

  Raises:
    RuntimeError: if a flag of that name exists.
    ValueError: if the environment value (or ``default``) is no boolean.
  """
  if name in config._values:
    raise RuntimeError(f'Config option {name} already defined')
  value = static_bool_env(name.upper(), default)
  config._add_option(Flag(name, default, help), value)
  return FlagHolder(name, help)


def int_flag(name: str, *, default: int | None, help: str) -> FlagHolder[int]:
  """Defines an integer flag and returns a holder of it.

  Its initial value comes from the environment variable ``name.upper()``
  if set, else ``default``.

  Raises:
    RuntimeError: if a flag of that name exists.
    ValueError: if the environment value is not an integer.
  """
  if name in config._values:
    raise RuntimeError(f'Config option {name} already defined')
  value = static_int_env(name.upper(), default)
  config._add_option(Flag(name, default, help), value)
  return FlagHolder(name, help)


def define_bool_state(name: str, default: bool, help: str) -> FlagHolder[bool]:
  """Defines the boolean flag ``flax_<name>`` and returns a holder of it.

  Its value comes from ``flax.config.update``, else the environment variable
  ``FLAX_<NAME>``, else ``default``.
  """
  full_name = name if name.startswith('flax_') else f'flax_{name}'
  config.define(Flag(full_name, bool(default), help))
  return FlagHolder(full_name, help)


# Flax 0.12.8's flags, in Flax's order, then this project's own.
_CORE_FLAGS = (
  Flag(
    'flax_filter_frames',
    True,
    'Whether to hide flax-internal stack frames from tracebacks.',
  ),
  Flag(
    'flax_profile',
    True,
    'Whether to run Module methods under jax.named_scope for profiles.',
  ),
  Flag(
    'flax_use_orbax_checkpointing',
    True,
    'Whether to use Orbax to save checkpoints.',
  ),
  Flag(
    'flax_preserve_adopted_names',
    False,
    "When adopting outside modules, don't clobber existing names.",
  ),
  Flag(
    'flax_return_frozendict',
    False,
    'Whether to return FrozenDicts when calling init or apply.',
  ),
  Flag(
    'flax_fix_rng_separator',
    False,
    'Whether to add a separator character when folding in static data '
    'into PRNG keys.',
  ),
  Flag(
    'flax_use_flaxlib',
    False,
    'Whether to use flaxlib for C++ acceleration (not available here).',
  ),
  Flag(
    'flax_array_ref',
    False,
    'Whether NNX Variables hold array references.',
  ),
  Flag(
    'flax_pytree_module',
    True,
    'Whether Modules are pytrees by default.',
  ),
  Flag(
    'flax_max_repr_depth',
    None,
    'Depth at which reprs of nested objects are cut (None: no limit).',
  ),
  Flag(
    'flax_always_shard_variable',
    True,
    'Whether a Variable always carries its sharding annotations.',
  ),
  Flag(
    'flax_hijax_variable',
    False,
    'Whether to use hijax for Variables.',
  ),
  Flag(
    'nnx_graph_mode',
    True,
    'Whether NNX APIs default to graph mode.',
  ),
  Flag(
    'nnx_graph_updates',
    True,
    'Whether NNX transforms propagate graph updates.',
  ),
  Flag(
    'flax_checkpoint_backend',
    '',
    'Name of the checkpoint backend to use (empty: choose by priority).',
  ),
  Flag(
    'flax_partitioning_backend',
    '',
    'Name of the partitioning backend to use (empty: by priority).',
  ),
  Flag(
    'flax_plugins_strict',
    False,
    'Raise instead of warning when a plugin fails to load.',
  ),
)

config = Config()


def _holder(name: str) -> FlagHolder:
  return FlagHolder(name, config._flags[name].help)


flax_filter_frames = _holder('flax_filter_frames')
flax_profile = _holder('flax_profile')
flax_use_orbax_checkpointing = _holder('flax_use_orbax_checkpointing')
flax_preserve_adopted_names = _holder('flax_preserve_adopted_names')
flax_return_frozendict = _holder('flax_return_frozendict')
flax_fix_rng = _holder('flax_fix_rng_separator')
flax_use_flaxlib = _holder('flax_use_flaxlib')
flax_array_ref = _holder('flax_array_ref')
flax_pytree_module = _holder('flax_pytree_module')
flax_max_repr_depth = _holder('flax_max_repr_depth')
flax_always_shard_variable = _holder('flax_always_shard_variable')
flax_hijax_variable = _holder('flax_hijax_variable')
nnx_graph_mode = _holder('nnx_graph_mode')
nnx_graph_updates = _holder('nnx_graph_updates')
