"""The install command that error messages suggest for a missing distribution.

Installed from an index, ``flax-training`` is ``pip install flax-training``
and pip finds its sibling dependencies there too. Installed from a checkout
of the repository (``pip install ./packages/core ...``, ``pip install .`` or
``uv sync``), no index holds the siblings, so the command names the package
folders of that checkout, with every sibling they need that is not installed
yet:

>>> from flax.plugins import _install
>>> _install.install_command('flax-not-a-package')
'pip install flax-not-a-package'
"""

# Imported by every namespace, but used only to word errors: the heavier
# modules are imported inside the functions.
import importlib.metadata
import os
import pathlib

_PREFIX = 'flax-'


def _installed(distribution: str) -> bool:
  try:
    importlib.metadata.distribution(distribution)
  except importlib.metadata.PackageNotFoundError:
    return False
  return True


def checkout_root() -> pathlib.Path | None:
  """The repository checkout flax-core was installed from, if any."""
  import json
  import urllib.parse

  try:
    text = importlib.metadata.distribution('flax-core').read_text(
      'direct_url.json'
    )
  except importlib.metadata.PackageNotFoundError:
    return None
  if not text:
    return None
  try:
    info = json.loads(text)
  except ValueError:
    return None
  url = info.get('url', '')
  if 'dir_info' not in info or not url.startswith('file:'):
    return None
  folder = pathlib.Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))
  root = folder.parent.parent
  if folder.parent.name != 'packages' or not (root / 'packages').is_dir():
    return None
  return root


def _folder(root: pathlib.Path, distribution: str) -> pathlib.Path | None:
  if not distribution.startswith(_PREFIX):
    return None
  folder = root / 'packages' / distribution[len(_PREFIX) :]
  return folder if (folder / 'pyproject.toml').is_file() else None


def _sibling_requirements(folder: pathlib.Path, extras=()) -> list[str]:
  import tomllib

  project = tomllib.loads((folder / 'pyproject.toml').read_text())['project']
  requirements = list(project.get('dependencies', []))
  for extra in extras:
    requirements += project.get('optional-dependencies', {}).get(extra, [])
  names = []
  for requirement in requirements:
    name = requirement.split(';')[0].strip()
    for separator in '<>=!~[ @':
      name = name.split(separator)[0]
    if name.startswith(_PREFIX):
      names.append(name)
  return names


def _closure(root, distribution, extras=()):
  """``distribution`` and the siblings it needs that are not installed."""
  wanted, pending = [], [(distribution, tuple(extras))]
  while pending:
    name, name_extras = pending.pop(0)
    folder = _folder(root, name)
    if folder is None or name in wanted:
      continue
    if name != distribution and _installed(name):
      continue
    wanted.append(name)
    pending += [(n, ()) for n in _sibling_requirements(folder, name_extras)]
  return wanted


def _shown(path: pathlib.Path) -> str:
  """``path`` relative to the working directory when it lies below it."""
  try:
    relative = path.relative_to(pathlib.Path(os.getcwd()).resolve())
  except ValueError:
    return str(path)
  return f'./{relative.as_posix()}'


def install_command(distribution: str, extras=()) -> str:
  """A ``pip install`` command that provides ``distribution`` here.

  Args:
    distribution: a distribution name, e.g. ``'flax-training'``.
    extras: extras of ``distribution`` that are needed too.

  Returns:
    ``pip install <distribution>[extras]`` when the installed packages came
    from an index; ``pip install <checkout>/packages/<name> ...`` (the
    distribution and each sibling it needs that is missing) when they came
    from a checkout that has the package.
  """
  import shlex

  suffix = f'[{",".join(extras)}]' if extras else ''
  root = checkout_root()
  if root is not None and _folder(root, distribution) is not None:
    names = _closure(root, distribution, extras)
    arguments = [
      _shown(_folder(root, name)) + (suffix if name == distribution else '')
      for name in names
    ]
    return 'pip install ' + ' '.join(shlex.quote(a) for a in arguments)
  return 'pip install ' + shlex.quote(distribution + suffix)
