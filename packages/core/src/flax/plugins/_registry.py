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
  # 'ok', 'failed', 'disabled', or 'not loaded' (a third-party plugin no
  # lookup has needed yet).
  status: str = 'ok'
  error: str = ''
  provides: dict = dataclasses.field(default_factory=dict)
  # Records dropped when the registry was built, with the reason.
  skipped: list = dataclasses.field(default_factory=list)

  @property
  def first_party(self) -> bool:
    return self.distribution in FIRST_PARTY


@dataclasses.dataclass
class Conflict:
  """Two or more distributions that provide one name."""

  kind: str
  key: tuple
  distributions: tuple

  def what(self) -> str:
    if self.kind == 'exports':
      return '.'.join(self.key)
    return f'{self.kind.replace("_", " ")[:-1]} {self.key[-1]!r}'

  def message(self) -> str:
    what = self.what()
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
    # Third-party plugins are read from entry-point metadata only; their
    # hook modules are imported when a lookup first needs them.
    self._pending = []
    self._loaded_all = False
    self._loading_thread = None
    self._load_lock = threading.RLock()
    if entry_points is None:
      entry_points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    disabled = _env_list(DISABLE_ENV)
    for ep in sorted(entry_points, key=lambda e: e.name):
      self._add(ep, disabled)
    self._check_conflicts()
    if strict_mode():
      self.load_all()  # CI wants every problem at once.

  @property
  def fully_loaded(self) -> bool:
    """Whether every enabled plugin's hook module has been imported."""
    return self._loaded_all

  def load_all(self) -> None:
    """Imports the third-party plugins that no lookup has needed yet."""
    if self._loaded_all or self._loading_thread == threading.get_ident():
      return
    with self._load_lock:
      if self._loaded_all:
        return
      self._loading_thread = threading.get_ident()
      try:
        for ep, info in self._pending:
          self._load(ep, info)
        self._pending = []
        self._check_conflicts()
        self._loaded_all = True
      finally:
        self._loading_thread = None
    self.emit_warnings()

  # -- building ---------------------------------------------------------------

  def _add(self, ep, disabled):
    dist = ep.dist.name if getattr(ep, 'dist', None) else ep.name
    version = ep.dist.version if getattr(ep, 'dist', None) else '?'
    info = PluginInfo(dist, version, f'{ep.name} = {ep.value}')
    self.plugins.append(info)
    if dist in disabled or ep.name in disabled:
      info.status = 'disabled'
    elif info.first_party:
      self._load(ep, info)
    else:
      info.status = 'not loaded'
      self._pending.append((ep, info))

  def _load(self, ep, info):
    info.status = 'ok'
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
      provides[kind] = [r for r in records if self._valid(info, hook, r)]
    info.provides = provides
    for kind, records in provides.items():
      index = self._index[kind]
      for record in records:
        key = _record_key(kind, record)
        index.setdefault(key, []).append((info.distribution, record))

  def _valid(self, info, hook, record) -> bool:
    problem = _records.record_problem(record)
    if problem is None:
      return True
    reason = f'{hook} returned {record!r}: {problem}'
    info.skipped.append(reason)
    message = (
      f'Flax plugin {info.distribution!r} ({info.version}): a record was '
      f'skipped: {reason}'
    )
    self._problems.append(message)
    if strict_mode():
      raise PluginError(message)
    return False

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
        if len(dists) < 2:
          continue
        first = [d for d in dists if d in FIRST_PARTY]
        if first:
          # First-party names win; third-party claims on them are dropped.
          for dist in dists:
            if dist not in FIRST_PARTY:
              self._shadowed(kind, key, dist, first[0])
          providers[:] = [p for p in providers if p[0] in FIRST_PARTY]
          dists = tuple(first)
        if len(dists) > 1:
          self.conflicts[(kind, key)] = Conflict(kind, key, dists)

  def _shadowed(self, kind, key, dist, owner):
    what = Conflict(kind, key, (dist,)).what()
    message = (
      f'Flax plugin {dist!r} provides {what}, which the first-party '
      f"distribution {owner!r} provides; the plugin's version is ignored. "
      f'Rename it in {dist!r}.'
    )
    if strict_mode():
      raise PluginConflictError(message)
    self._problems.append(message)

  def emit_warnings(self):
    """Warns once about every plugin that failed to load."""
    problems, self._problems = self._problems, []
    for message in problems:
      warnings.warn(message, FlaxPluginWarning, stacklevel=4)

  # -- queries ----------------------------------------------------------------

  def _providers(self, kind, key, load=True):
    # First-party records answer without importing any third-party plugin
    # (a third-party claim on a first-party name is ignored anyway).
    providers = self._index[kind].get(key)
    if not providers and load and not self._loaded_all:
      self.load_all()
      providers = self._index[kind].get(key)
    return providers

  def _unique(self, kind, key, load=True):
    providers = self._providers(kind, key, load)
    if not providers:
      return None
    conflict = self.conflicts.get((kind, key))
    if conflict is not None:
      raise PluginConflictError(conflict.message())
    return providers[0][1]

  def export(self, namespace: str, name: str, *, load: bool = True):
    """The ``Export`` of ``namespace.name``, or None if nobody provides it.

    With ``load=False`` only plugins imported so far are asked.
    """
    return self._unique('exports', (namespace, name), load)

  def export_provider(self, namespace: str, name: str):
    providers = self._providers('exports', (namespace, name))
    return providers[0][0] if providers else None

  def export_names(self, namespace: str):
    self.load_all()
    return sorted(n for ns, n in self._index['exports'] if ns == namespace)

  def exports(self, namespace=None):
    """All ``(distribution, Export)`` pairs, optionally of one namespace."""
    self.load_all()
    return [
      pair
      for (ns, _), providers in self._index['exports'].items()
      if namespace is None or ns == namespace
      for pair in providers
    ]

  def backends(self, kind: str):
    """``{name: (distribution, Backend)}`` for ``kind`` in
    ``('checkpoint', 'partitioning')``."""
    self.load_all()
    index = self._index[f'{kind}_backends']
    return {key[0]: providers[0] for key, providers in index.items()}

  def backend(self, kind: str, name: str):
    return self._unique(f'{kind}_backends', (name,))

  def state_handler(self, type_name: str):
    """The ``StateHandler`` for ``'module:Class'``, or None."""
    providers = self._providers('state_handlers', (type_name,))
    if not providers or ('state_handlers', (type_name,)) in self.conflicts:
      return None
    return providers[0][1]

  def state_handlers(self):
    self.load_all()
    return [
      p[0][1]
      for key, p in sorted(self._index['state_handlers'].items())
      if (('state_handlers', key) not in self.conflicts)
    ]

  def config_options(self):
    self.load_all()
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
