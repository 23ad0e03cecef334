"""The Flax plugin system, built on pluggy.

Every distribution, first- or third-party, declares one entry point in the
``flax`` group, named after the distribution, pointing at a small module of
hook implementations. Hooks return records of import strings, so discovery
imports nothing heavy. A third-party layer package looks like this::

  # pyproject.toml
  [project.entry-points.flax]
  my-layers = "my_layers.flax_plugin"

  # my_layers/flax_plugin.py
  from flax import plugins

  @plugins.hookimpl
  def flax_exports():
    return [plugins.Export('flax.nnx', 'Fancy', 'my_layers.nnx:Fancy')]

after which ``from flax.nnx import Fancy`` works.

>>> from flax import plugins
>>> plugins.Export('flax.nnx', 'Fancy', 'my_layers.nnx:Fancy').name
'Fancy'

Environment variables: ``FLAX_DISABLE_PLUGINS=dist-a,dist-b`` skips named
plugins; ``FLAX_PLUGINS_STRICT=1`` raises on a broken plugin instead of
warning. ``python -m flax.plugins`` prints a report.
"""

from flax.plugins._backends import backend_names
from flax.plugins._backends import requested_backend
from flax.plugins._backends import select_backend
from flax.plugins._backends import use_backend
from flax.plugins._catalog import first_party_exports
from flax.plugins._install import install_command
from flax.plugins._namespace import PluginImportError
from flax.plugins._namespace import lazy_namespace
from flax.plugins._namespace import require
from flax.plugins._records import Backend
from flax.plugins._records import ConfigOption
from flax.plugins._records import Export
from flax.plugins._records import StateHandler
from flax.plugins._records import load_target
from flax.plugins._registry import FIRST_PARTY
from flax.plugins._registry import FlaxPluginWarning
from flax.plugins._registry import PluginConflictError
from flax.plugins._registry import PluginError
from flax.plugins._registry import Registry
from flax.plugins._registry import registry
from flax.plugins._registry import reset
from flax.plugins._specs import hookimpl
from flax.plugins._specs import hookspec

__all__ = [
  'Backend',
  'ConfigOption',
  'Export',
  'FIRST_PARTY',
  'FlaxPluginWarning',
  'PluginConflictError',
  'PluginError',
  'PluginImportError',
  'Registry',
  'StateHandler',
  'backend_names',
  'first_party_exports',
  'hookimpl',
  'hookspec',
  'install_command',
  'lazy_namespace',
  'load_target',
  'registry',
  'require',
  'requested_backend',
  'reset',
  'select_backend',
  'use_backend',
]
