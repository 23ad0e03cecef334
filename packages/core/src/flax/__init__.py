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

from flax import version as version


def _providers(cache=[]):  # noqa: B006 - built once, on first use
  """``{subpackage: distribution}``, from the first-party export table."""
  if not cache:
    from flax.plugins._catalog import first_party_names
    from flax.plugins._catalog import first_party_provider

    cache.append(
      {
        name: first_party_provider('flax', name)[0]
        for name in first_party_names('flax')
      }
    )
  return cache[0]


def _missing(fullname):
  """Error for a known ``flax.<name>`` whose distribution is not installed."""
  from flax.plugins._aliases import missing

  return missing(fullname, _providers()[fullname.split('.')[1]])


class _MissingSubpackageFinder:
  """Last-resort finder of the ``flax`` namespace.

  It gives module paths that the plugin exports alias to another module
  (``flax.linen.linear``) and names the distribution of a missing
  subpackage.
  """

  @staticmethod
  def find_spec(fullname, path=None, target=None):
    parts = fullname.split('.')
    if parts[0] != 'flax' or len(parts) < 2:
      return None
    if len(parts) == 2:
      if _providers().get(parts[1], 'flax-core') != 'flax-core':
        raise _missing(fullname)
      return None
    from flax.plugins._aliases import find_alias_spec

    return find_alias_spec(fullname)


def _install_finder():
  import sys

  if not any(
    isinstance(f, type) and f is _MissingSubpackageFinder for f in sys.meta_path
  ):
    sys.meta_path.append(_MissingSubpackageFinder)


_install_finder()


def __getattr__(name):
  if name == '__version__':
    return version.__version__
  if name == 'config':
    from flax.configurations import config

    globals()['config'] = config
    return config
  if name in _providers():
    import importlib

    return importlib.import_module(f'flax.{name}')
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
  return sorted(set(globals()) | set(_providers()) | {'config', '__version__'})
