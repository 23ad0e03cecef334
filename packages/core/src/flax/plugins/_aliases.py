"""Module paths that are other modules: ``flax.linen.linear`` and the like.

An ``Export`` whose target is a whole module (no ``:attr``) also makes
``namespace.name`` importable as a module path, and that path is the target
module object itself: ``import flax.linen.linear`` and ``nn.linear`` give
the one ``flax.layers.linen.linear``. The finder below is consulted only
after the ordinary ones fail, so real modules always win.
"""

import importlib.abc
import importlib.machinery
import sys

from flax.plugins import _catalog
from flax.plugins import _install
from flax.plugins import _records


class _AliasLoader(importlib.abc.Loader):
  def __init__(self, target, distribution):
    self.target = target
    self.distribution = distribution

  def create_module(self, spec):
    return None  # a placeholder, replaced in exec_module

  def exec_module(self, module):
    try:
      target = _records.import_module(self.target)
    except ModuleNotFoundError as e:
      if e.name and self.target.startswith(e.name):
        raise missing(module.__name__, self.distribution) from e
      raise
    # The import system returns what sys.modules holds after this call.
    sys.modules[module.__name__] = target


def missing(fullname, distribution):
  """The error for a module path whose distribution is not installed."""
  return ModuleNotFoundError(
    f'{fullname!r} is provided by the {distribution!r} distribution, which '
    f'is not installed. Install it with '
    f'`{_install.install_command(distribution)}`.',
    name=fullname,
  )


def find_alias_spec(fullname):
  """A spec for ``fullname`` if an ``Export`` makes it a module path."""
  from flax.plugins import _registry

  namespace, _, name = fullname.rpartition('.')
  if not namespace or namespace not in sys.modules:
    return None
  first_party = _catalog.first_party_provider(namespace, name)
  reg = _registry.registry()
  export = reg.export(namespace, name)
  if export is not None:
    distribution = reg.export_provider(namespace, name)
  elif first_party is not None:
    distribution, export = first_party
  else:
    return None
  if ':' in export.target or export.target == fullname:
    return None
  if reg.export(namespace, name) is None:
    raise missing(fullname, distribution)
  loader = _AliasLoader(export.target, distribution)
  return importlib.machinery.ModuleSpec(fullname, loader)
