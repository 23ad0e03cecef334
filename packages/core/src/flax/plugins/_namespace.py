"""Namespaces (``flax.linen``, ``flax.nnx``, ...) that plugins extend."""

import sys
import warnings

from flax.plugins import _install
from flax.plugins import _registry


class PluginImportError(AttributeError):
  """A plugin provides the name, but its code failed to import.

  It is an ``AttributeError``, so ``hasattr``, ``getattr(ns, name,
  default)``, ``inspect.getmembers`` and ``help`` treat the name as missing;
  the message names the distribution, the import string and the import
  error (also kept as ``__cause__`` and ``import_error``). (It cannot also
  subclass ``ImportError``: CPython's two exception layouts conflict.)
  """

  def __init__(self, message, *, name=None, obj=None, import_error=None):
    super().__init__(message, name=name, obj=obj)
    self.import_error = import_error


def lazy_namespace(module_name: str, hints=None):
  """Makes a module resolve unknown attributes through the plugin registry.

  Use it at the end of a namespace module::

    __getattr__, __dir__ = lazy_namespace(__name__, hints={'Dense': ...})

  A name is looked up on first access, then cached in the module, so later
  accesses cost a plain attribute read. ``dir()`` lists plugin names too.
  A name whose plugin code fails to import raises ``PluginImportError`` (an
  ``AttributeError``), so it behaves as a missing name for ``hasattr``.

  The first-party table (``first_party_exports``) drives it: names the
  namespace's own distribution exports load straight from their target
  (no plugin discovery); other names resolve through the registry; a
  missing name that a first-party distribution provides names it in the
  error.

  Args:
    module_name: the namespace, e.g. ``'flax.nnx'``.
    hints: optional extra ``{name: distribution}`` for names of other
      distributions, so that the error for a missing one says what to
      install.

  Returns:
    ``(__getattr__, __dir__)`` for the module.
  """
  from flax.plugins import _catalog

  hints = dict(hints or {})
  own_dist = _catalog.owner(module_name)
  checked = []
  failed = {}  # name -> (message, import error): failures are not retried

  def module():
    return sys.modules[module_name]

  def check_shadowing(reg):
    # A plugin may not replace a name the namespace defines itself. Only
    # checked once every plugin is loaded (no lookup imports one for it).
    if checked or not reg.fully_loaded:
      return
    checked.append(True)
    own = vars(module())
    for dist, export in reg.exports(module_name):
      if export.name in own and dist not in _registry.FIRST_PARTY:
        message = (
          f'Flax plugin {dist!r} exports {module_name}.{export.name}, a name '
          f"that {module_name} already defines; the plugin's version is "
          f'ignored. Rename it in {dist!r}.'
        )
        if _registry.strict_mode():
          raise _registry.PluginConflictError(message)
        warnings.warn(message, _registry.FlaxPluginWarning, stacklevel=3)

  def broken(name):
    message, error = failed[name]
    raise PluginImportError(
      message, name=name, obj=module(), import_error=error
    ) from error

  def __getattr__(name):
    if name.startswith('__') and name.endswith('__'):
      raise AttributeError(f'module {module_name!r} has no attribute {name!r}')
    if name in failed:
      broken(name)
    first_party = _catalog.first_party_provider(module_name, name)
    if first_party is not None and first_party[0] == own_dist:
      # The namespace's own name: no plugin discovery needed.
      dist, export = first_party
    else:
      dist, export = lookup(name, first_party)
    try:
      value = export.load()
    except Exception as e:  # noqa: BLE001 - any failure to import it.
      failed[name] = (
        f'{module_name}.{name} is provided by {dist!r} as {export.target!r}, '
        f'which failed to import: {type(e).__name__}: {e}',
        e,
      )
      broken(name)
    setattr(module(), name, value)
    return value

  def lookup(name, first_party):
    reg = _registry.registry()
    # ``from ns import submodule`` asks with hasattr() before importing a
    # submodule: answer that from the plugins already loaded.
    load = not _is_submodule(module(), name)
    export = reg.export(module_name, name, load=load)
    if export is None and not load:
      raise AttributeError(f'module {module_name!r} has no attribute {name!r}')
    check_shadowing(reg)
    if export is None:
      hint = hints.get(name) or (first_party and first_party[0])
      if hint and not _installed(hint):
        extra = (
          f'; it is provided by the {hint!r} distribution: '
          f'`{_install.install_command(hint)}`'
        )
      else:
        extra = (
          '; no installed distribution provides it (see '
          '`python -m flax.plugins`)'
        )
      raise AttributeError(
        f'module {module_name!r} has no attribute {name!r}{extra}'
      )
    return reg.export_provider(module_name, name), export

  def __dir__():
    reg = _registry.registry()
    names = reg.export_names(module_name)
    check_shadowing(reg)
    own = _catalog.first_party_names(module_name, own_dist) if own_dist else []
    return sorted(set(vars(module())) | set(names) | set(own))

  return __getattr__, __dir__


def _is_submodule(module, name) -> bool:
  path = getattr(module, '__path__', None)
  if path is None or not name.isidentifier():
    return False
  import importlib.machinery

  return importlib.machinery.PathFinder.find_spec(name, list(path)) is not None


def _installed(distribution: str) -> bool:
  import importlib.metadata

  try:
    importlib.metadata.distribution(distribution)
  except importlib.metadata.PackageNotFoundError:
    return False
  return True


def require(module_name: str, distribution: str):
  """Imports ``module_name``, naming ``distribution`` if it is missing.

  Alias modules use it, e.g. ``flax.linen.linear`` re-exports
  ``flax.layers.linen.linear``, which flax-layers provides.
  """
  from flax.plugins import _records

  try:
    return _records.import_module(module_name)
  except ModuleNotFoundError as e:
    if e.name and module_name.startswith(e.name):
      raise ModuleNotFoundError(
        f'{module_name!r} is provided by the {distribution!r} distribution, '
        f'which is not installed. Install it with '
        f'`{_install.install_command(distribution)}`.',
        name=module_name,
      ) from e
    raise
