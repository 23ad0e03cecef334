"""Flax: neural networks for JAX, as a set of small distributions.

This root module is shared by every ``flax-*`` distribution. It stays tiny:
it extends ``__path__`` so that the ``flax/<name>/`` folders of the other
distributions are found, exposes ``__version__`` and ``config``, and imports
subpackages lazily on attribute access:

>>> import flax
>>> flax.config.flax_return_frozendict
False
"""

__path__ = __import__('pkgutil').extend_path(__path__, __name__)

from flax.version import __version__ as __version__

# Subpackages (and top-level modules) of the flax namespace, with the
# distribution that provides each one.
_PROVIDERS = {
  'configurations': 'flax-core',
  'core': 'flax-core',
  'cursor': 'flax-core',
  'errors': 'flax-core',
  'ids': 'flax-core',
  'io': 'flax-core',
  'plugins': 'flax-core',
  'struct': 'flax-core',
  'traceback_util': 'flax-core',
  'traverse_util': 'flax-core',
  'typing': 'flax-core',
  'serialization': 'flax-serialization',
  'spmd': 'flax-spmd',
  'linen': 'flax-linen',
  'nnx': 'flax-nnx',
  'layers': 'flax-layers',
  'training': 'flax-training',
  'jax_utils': 'flax-training',
}


def _missing(fullname):
  """Error for a known ``flax.<name>`` whose distribution is not installed."""
  from flax.plugins._install import install_command

  name = fullname.split('.')[1]
  dist = _PROVIDERS[name]
  return ModuleNotFoundError(
    f'No module named {fullname!r}: it is provided by the {dist!r} '
    f'distribution, which is not installed. Install it with '
    f'`{install_command(dist)}`.',
    name=fullname,
  )


class _MissingSubpackageFinder:
  """Last-resort finder naming the distribution of a missing subpackage."""

  @staticmethod
  def find_spec(fullname, path=None, target=None):
    parts = fullname.split('.')
    if (
      len(parts) == 2
      and parts[0] == 'flax'
      and _PROVIDERS.get(parts[1], 'flax-core') != 'flax-core'
    ):
      raise _missing(fullname)
    return None


def _install_finder():
  import sys

  if not any(
    isinstance(f, type) and f is _MissingSubpackageFinder for f in sys.meta_path
  ):
    sys.meta_path.append(_MissingSubpackageFinder)


_install_finder()


def __getattr__(name):
  if name == 'config':
    from flax.configurations import config

    globals()['config'] = config
    return config
  if name in _PROVIDERS:
    import importlib

    return importlib.import_module(f'flax.{name}')
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
  return sorted(set(globals()) | set(_PROVIDERS) | {'config'})
