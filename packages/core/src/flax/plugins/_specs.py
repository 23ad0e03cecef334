"""The hook specifications of the ``flax`` plugin system.

A plugin module implements any of these functions, decorated with
``flax.plugins.hookimpl``. Each returns a list of records; none of them may
import anything heavy.
"""

import pluggy

PROJECT = 'flax'
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def flax_exports():
  """Returns a list of ``Export`` records: names added to namespaces."""


@hookspec
def flax_checkpoint_backends():
  """Returns a list of ``Backend`` records for checkpoint formats."""


@hookspec
def flax_partitioning_backends():
  """Returns a list of ``Backend`` records for partitioning."""


@hookspec
def flax_state_handlers():
  """Returns a list of ``StateHandler`` records for custom types."""


@hookspec
def flax_config_options():
  """Returns a list of ``ConfigOption`` records added to ``flax.config``."""


# hook name -> (record type, registry attribute)
HOOKS = {
  'flax_exports': 'exports',
  'flax_checkpoint_backends': 'checkpoint_backends',
  'flax_partitioning_backends': 'partitioning_backends',
  'flax_state_handlers': 'state_handlers',
  'flax_config_options': 'config_options',
}
