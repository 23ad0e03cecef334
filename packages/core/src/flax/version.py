"""``flax.__version__``: the Flax release that the installed packages reproduce.

The ``flax-*`` distributions each have their own version (``python -m
flax.plugins`` lists them, ``importlib.metadata.version('flax-nnx')`` gives
one). ``flax.__version__`` is not one of them: libraries compare it with
Flax releases (``>= 0.10.6``, ``< 0.11``), so it says which Flax release the
packages behave as, ``COMPATIBLE_VERSION``, with a local version label that
names this project:

- with the ``flax`` distribution installed (the drop-in for Flax, which
  requires the seven packages), it is that distribution's version, e.g.
  ``'0.12.8+modular.1'``, the same string as
  ``importlib.metadata.version('flax')``;
- with only some ``flax-*`` packages installed (no ``flax`` distribution),
  it is ``'0.12.8+modular'``.

Either way it compares as Flax 0.12.8 does against any public Flax release
(``packaging.version.Version('0.12.8+modular') >= Version('0.12.8')``).
The value is looked up the first time it is read, so ``import flax`` does not
read package metadata.
"""

# The Flax release whose behaviour the packages reproduce.
COMPATIBLE_VERSION = '0.12.8'
# Local version label of this project (PEP 440: `0.12.8+modular...`).
LOCAL_LABEL = 'modular'
# The distribution whose version `flax.__version__` reports when installed.
DISTRIBUTION = 'flax'


def _installed_version():
  """The ``flax`` distribution's version if it is this project's, or None.

  A ``flax`` distribution that does not require ``flax-core`` is not this
  project's (files of another Flax were installed over it); its version
  does not describe the code that runs.
  """
  # Imported on first use: importlib.metadata is not needed by `import flax`.
  import importlib.metadata

  try:
    dist = importlib.metadata.distribution(DISTRIBUTION)
  except importlib.metadata.PackageNotFoundError:
    return None
  requires = [r.replace(' ', '') for r in dist.requires or ()]
  if not any(r.startswith(('flax-core', 'flax_core')) for r in requires):
    return None
  return dist.version


def _version():
  return _installed_version() or f'{COMPATIBLE_VERSION}+{LOCAL_LABEL}'


def __getattr__(name):
  if name == '__version__':
    value = _version()
    globals()['__version__'] = value
    return value
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
