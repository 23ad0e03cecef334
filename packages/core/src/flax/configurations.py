"""Global configuration flags of Flax.

Flags are read as attributes of ``flax.config`` and changed with
``flax.config.update``. Each flag can also be set before start-up with an
environment variable of the same name in upper case (``FLAX_<NAME>``).
Packages add flags of their own through the ``flax_config_options`` plugin
hook.

>>> import flax
>>> flax.config.update('flax_return_frozendict', True)
>>> flax.config.flax_return_frozendict
True
>>> flax.config.update('flax_return_frozendict', False)
"""

import contextlib
import os
import threading
from typing import Any, NamedTuple

_TRUE = frozenset({'1', 'true', 't', 'yes', 'y', 'on'})
_FALSE = frozenset({'0', 'false', 'f', 'no', 'n', 'off', ''})


class Flag(NamedTuple):
  """A configuration flag: its name, default value and help text."""

  name: str
  default: Any
  help: str = ''


def _parse(flag: Flag, raw: str) -> Any:
  """Parses an environment-variable string into the flag's type."""
  default = flag.default
  if isinstance(default, bool):
    low = raw.strip().lower()
    if low in _TRUE:
      return True
    if low in _FALSE:
      return False
    raise ValueError(
      f'Environment variable {flag.name.upper()}={raw!r} is not a boolean; '
      f'use one of true/false, 1/0, yes/no, on/off.'
    )
  if isinstance(default, int):
    try:
      return int(raw)
    except ValueError:
      raise ValueError(
        f'Environment variable {flag.name.upper()}={raw!r} is not an integer.'
      ) from None
  return raw


_CORE_FLAGS = (
  Flag(
    'flax_filter_frames', True, 'Hide Flax-internal frames from tracebacks.'
  ),
  Flag(
    'flax_profile',
    True,
    'Wrap Module methods in jax.named_scope so profiles show module names.',
  ),
  Flag(
    'flax_use_orbax_checkpointing',
    True,
    'Save checkpoints with the Orbax backend when it is installed.',
  ),
  Flag(
    'flax_preserve_adopted_names',
    True,
    'Keep the names of submodules adopted by a parent Module.',
  ),
  Flag(
    'flax_return_frozendict',
    False,
    'Make Linen init/apply return FrozenDict instead of dict.',
  ),
  Flag(
    'flax_fix_rng_separator',
    False,
    'Separate the items of PRNG key paths with a zero byte.',
  ),
  Flag(
    'flax_relaxed_naming',
    True,
    'Allow Linen submodule names to be reused across methods.',
  ),
  Flag(
    'flax_use_flaxlib',
    False,
    'Use the compiled flaxlib helpers (not available here).',
  ),
  Flag(
    'flax_max_repr_depth',
    0,
    'Depth at which reprs of nested objects are cut (0: no limit).',
  ),
  Flag(
    'flax_always_shard_variable',
    True,
    'Apply sharding metadata to NNX Variables when they are created.',
  ),
  Flag(
    'flax_graph_mode',
    True,
    'Make NNX transforms and utilities default to graph mode.',
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


class Config:
  """Holds the values of every configuration flag.

  Values come from, in order: ``update``, the ``FLAX_<NAME>`` environment
  variable, the flag's default.
  """

  def __init__(self, flags=_CORE_FLAGS):
    self._lock = threading.RLock()
    self._flags = {}
    self._values = {}
    self._plugins_loaded = False
    for flag in flags:
      self.define(flag)

  def define(self, flag: Flag) -> None:
    """Adds a flag; its value is read from the environment if set there."""
    with self._lock:
      if flag.name in self._flags:
        if self._flags[flag.name].default != flag.default:
          raise ValueError(
            f'Config flag {flag.name!r} is defined twice with different '
            f'defaults ({self._flags[flag.name].default!r} and '
            f'{flag.default!r}).'
          )
        return
      self._flags[flag.name] = flag
      raw = os.environ.get(flag.name.upper())
      value = flag.default if raw is None else _parse(flag, raw)
      object.__setattr__(self, flag.name, value)
      self._values[flag.name] = value

  def _load_plugin_flags(self) -> None:
    with self._lock:
      if self._plugins_loaded:
        return
      self._plugins_loaded = True
      from flax import plugins

      for option in plugins.registry().config_options():
        self.define(Flag(option.name, option.default, option.help))

  def _lookup(self, name: str) -> Flag:
    if name not in self._flags:
      self._load_plugin_flags()
    if name not in self._flags:
      raise LookupError(
        f'Unrecognized config option: {name!r}. Known options: '
        f'{", ".join(sorted(self._flags))}.'
      )
    return self._flags[name]

  def __getattr__(self, name):
    # Only called for names that are not set yet: unknown flags or flags
    # that a plugin adds.
    if name.startswith('_'):
      raise AttributeError(name)
    try:
      self._lookup(name)
    except LookupError as e:
      # getattr(config, name, default) and hasattr() expect AttributeError.
      raise AttributeError(str(e)) from None
    return self._values[name]

  def __setattr__(self, name, value):
    if name.startswith('_'):
      object.__setattr__(self, name, value)
    else:
      raise AttributeError(
        f'Use flax.config.update({name!r}, value) to change a flag.'
      )

  def update(self, name: str, value: Any) -> None:
    """Sets the flag ``name`` to ``value``."""
    flag = self._lookup(name)
    if isinstance(flag.default, bool) and not isinstance(value, bool):
      if isinstance(value, str):
        value = _parse(flag, value)
      else:
        raise TypeError(f'Config flag {name!r} takes a bool, got {value!r}.')
    with self._lock:
      self._values[name] = value
      object.__setattr__(self, name, value)

  @contextlib.contextmanager
  def temp_flip_flag(self, name: str, value: Any):
    """Context manager that sets a flag and restores it on exit."""
    if not name.startswith('flax_'):
      name = f'flax_{name}'
    old = getattr(self, name)
    self.update(name, value)
    try:
      yield
    finally:
      self.update(name, old)

  def flags(self) -> dict:
    """Returns a dict of every known flag and its current value."""
    self._load_plugin_flags()
    return dict(self._values)

  def __repr__(self):
    items = ', '.join(f'{k}={v!r}' for k, v in sorted(self._values.items()))
    return f'Config({items})'


config = Config()


class FlagHolder:
  """Reads one flag of ``config``: ``holder.value``."""

  def __init__(self, name: str):
    self.name = name

  @property
  def value(self):
    return getattr(config, self.name)

  def __bool__(self):
    return bool(self.value)

  def __repr__(self):
    return f'FlagHolder({self.name}={self.value!r})'


def static_bool_env(varname: str, default: bool) -> bool:
  """Reads a boolean environment variable (deprecated; use ``config``).

  True values are y, yes, t, true, on and 1; false values are n, no, f,
  false, off and 0 (any case). An unset variable gives ``default``.

  Raises:
    ValueError: for any other value.
  """
  raw = os.environ.get(varname)
  if raw is None:
    return default
  low = raw.strip().lower()
  if low in _TRUE and low:
    return True
  if low in _FALSE and low:
    return False
  raise ValueError(f'invalid truth value {raw!r} for environment {varname!r}')


def define_bool_state(name: str, default: bool, help: str) -> FlagHolder:
  """Defines the boolean flag ``flax_<name>`` and returns a holder of it.

  Its value comes from ``flax.config.update``, else the environment variable
  ``FLAX_<NAME>``, else ``default``.
  """
  full_name = name if name.startswith('flax_') else f'flax_{name}'
  config.define(Flag(full_name, bool(default), help))
  return FlagHolder(full_name)
