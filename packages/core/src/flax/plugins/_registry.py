"""Discovery of plugins through the ``flax`` entry-point group."""

import dataclasses
import importlib.metadata
import os
import threading
import warnings

import pluggy

from flax.plugins import _records
from flax.plugins import _specs

ENTRY_POINT_GROUP = 'flax'
DISABLE_ENV = 'FLAX_DISABLE_PLUGINS'
STRICT_ENV = 'FLAX_PLUGINS_STRICT'

# Distributions of this project; third-party plugins may not replace their
# names.
FIRST_PARTY = frozenset(
  {
    'flax-core',
    'flax-serialization',
    'flax-spmd',
    'flax-linen',
    'flax-nnx',
    'flax-layers',
    'flax-training',
  }
)

_RECORD_TYPES = {
  'exports': _records.Export,
  'checkpoint_backends': _records.Backend,
  'partitioning_backends': _records.Backend,
  'state_handlers': _records.StateHandler,
  'config_options': _records.ConfigOption,
}


class PluginError(RuntimeError):
  """A plugin could not be loaded or used."""


class PluginConflictError(PluginError):
  """Two distributions provide the same name."""


class FlaxPluginWarning(UserWarning):
  """A plugin was skipped because it failed to load."""


def _env_list(name):
  return {s.strip() for s in os.environ.get(name, '').split(',') if s.strip()}


def strict_mode() -> bool:
  """Whether a failing plugin raises instead of warning."""
  return os.environ.get(STRICT_ENV, '').strip().lower() in {
    '1',
    'true',
    'yes',
    'on',
  }


@dataclasses.dataclass
class PluginInfo:
  """What one distribution's plugin is and what it provides."""

  distribution: str
  version: str
  entry_point: str
  status: str = 'ok'  # 'ok', 'failed' or 'disabled'
  error: str = ''
  provides: dict = dataclasses.field(default_factory=dict)

  @property
  def first_party(self) -> bool:
    return self.distribution in FIRST_PARTY


@dataclasses.dataclass
class Conflict:
  """Two or more distributions that provide one name."""

  kind: str
  key: tuple
  distributions: tuple

  def message(self) -> str:
    what = (
      '.'.join(self.key)
      if self.kind == 'exports'
      else (f'{self.kind.replace("_", " ")[:-1]} {self.key[-1]!r}')
    )
    dists = ' and '.join(repr(d) for d in self.distributions)
    return (
      f'{what} is provided by more than one distribution: {dists}. '
      f'Uninstall one of them, or disable one with the environment '
      f'variable {DISABLE_ENV}=<distribution>.'
    )


def _record_key(kind, record):
  if kind == 'exports':
    return (record.namespace, record.name)
  if kind == 'state_handlers':
    return (record.type,)
  return (record.name,)


class Registry:
  """Everything the installed plugins provide, built once.

  Attributes:
    plugins: ``PluginInfo`` for every entry point found, in name order.
  """

  def __init__(self, entry_points=None):
    self.plugins = []
    self.conflicts = {}
    self._index = {kind: {} for kind in _RECORD_TYPES}
    self._problems = []
    self._pm = pluggy.PluginManager(_specs.PROJECT)
    self._pm.add_hookspecs(_specs)
    if entry_points is None:
      entry_points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    disabled = _env_list(DISABLE_ENV)
    for ep in sorted(entry_points, key=lambda e: e.name):
      self._add(ep, disabled)

  # -- building ---------------------------------------------------------------

  def _add(self, ep, disabled):
    dist = ep.dist.name if getattr(ep, 'dist', None) else ep.name
    version = ep.dist.version if getattr(ep, 'dist', None) else '?'
    info = PluginInfo(dist, version, f'{ep.name} = {ep.value}')
    self.plugins.append(info)
    if dist in disabled or ep.name in disabled:
      info.status = 'disabled'
      return
    try:
      module = ep.load()
    except Exception as e:  # noqa: BLE001 - any import failure skips it.
      return self._fail(
        info,
        f'its entry point {ep.value!r} failed to import: '
        f'{type(e).__name__}: {e}',
      )
    hooks = [
      name
      for name in dir(module)
      if self._pm.parse_hookimpl_opts(module, name) is not None
    ]
    if not hooks:
      return self._fail(
        info,
        f'module {module.__name__!r} has no hook implementations; decorate '
        f'its hook functions with @flax.plugins.hookimpl '
        f'(hooks: {", ".join(_specs.HOOKS)}).',
      )
    unknown = [h for h in hooks if h not in _specs.HOOKS]
    if unknown:
      return self._fail(
        info,
        f'module {module.__name__!r} implements unknown hooks '
        f'{", ".join(unknown)}; the known hooks are '
        f'{", ".join(_specs.HOOKS)}.',
      )
    provides = {}
    for hook in hooks:
      kind = _specs.HOOKS[hook]
      try:
        records = list(getattr(module, hook)() or ())
      except Exception as e:  # noqa: BLE001
        return self._fail(info, f'hook {hook} raised {type(e).__name__}: {e}')
      record_type = _RECORD_TYPES[kind]
      bad = [r for r in records if not isinstance(r, record_type)]
      if bad:
        return self._fail(
          info,
          f'hook {hook} must return flax.plugins.{record_type.__name__} '
          f'records, got {bad[0]!r}.',
        )
      provides[kind] = records
    info.provides = provides
    for kind, records in provides.items():
      index = self._index[kind]
      for record in records:
        index.setdefault(_record_key(kind, record), []).append((dist, record))
    self._check_conflicts()

  def _fail(self, info, reason):
    info.status = 'failed'
    info.error = reason
    message = (
      f'Flax plugin {info.distribution!r} ({info.version}) was skipped: '
      f'{reason}'
    )
    self._problems.append(message)
    if strict_mode():
      raise PluginError(message)

  def _check_conflicts(self):
    self.conflicts = {}
    for kind, index in self._index.items():
      for key, providers in index.items():
        dists = tuple(dict.fromkeys(d for d, _ in providers))
        if len(dists) > 1:
          self.conflicts[(kind, key)] = Conflict(kind, key, dists)

  def emit_warnings(self):
    """Warns once about every plugin that failed to load."""
    problems, self._problems = self._problems, []
    for message in problems:
      warnings.warn(message, FlaxPluginWarning, stacklevel=4)

  # -- queries ----------------------------------------------------------------

  def _unique(self, kind, key):
    providers = self._index[kind].get(key)
    if not providers:
      return None
    conflict = self.conflicts.get((kind, key))
    if conflict is not None:
      raise PluginConflictError(conflict.message())
    return providers[0][1]

  def export(self, namespace: str, name: str):
    """The ``Export`` of ``namespace.name``, or None if nobody provides it."""
    return self._unique('exports', (namespace, name))

  def export_provider(self, namespace: str, name: str):
    providers = self._index['exports'].get((namespace, name))
    return providers[0][0] if providers else None

  def export_names(self, namespace: str):
    return sorted(n for ns, n in self._index['exports'] if ns == namespace)

  def exports(self, namespace=None):
    """All ``(distribution, Export)`` pairs, optionally of one namespace."""
    return [
      pair
      for (ns, _), providers in self._index['exports'].items()
      if namespace is None or ns == namespace
      for pair in providers
    ]

  def backends(self, kind: str):
    """``{name: (distribution, Backend)}`` for ``kind`` in
    ``('checkpoint', 'partitioning')``."""
    index = self._index[f'{kind}_backends']
    return {key[0]: providers[0] for key, providers in index.items()}

  def backend(self, kind: str, name: str):
    return self._unique(f'{kind}_backends', (name,))

  def state_handlers(self):
    return [
      p[0][1]
      for key, p in sorted(self._index['state_handlers'].items())
      if (('state_handlers', key) not in self.conflicts)
    ]

  def config_options(self):
    return [p[0][1] for key, p in sorted(self._index['config_options'].items())]

  def failures(self):
    return [p for p in self.plugins if p.status == 'failed']


_lock = threading.Lock()
_registry = None


def registry() -> Registry:
  """Returns the registry, building it on first use (thread-safe)."""
  global _registry
  reg = _registry
  if reg is None:
    with _lock:
      if _registry is None:
        _registry = Registry()
        _registry.emit_warnings()
      reg = _registry
  return reg


def reset() -> None:
  """Forgets the registry so that the next use rediscovers plugins."""
  global _registry
  with _lock:
    _registry = None
  # Distributions installed since the last build must be found.
  importlib.invalidate_caches()
