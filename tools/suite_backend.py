"""Build backend of the repository root: ``pip install .`` brings every package.

The root of the checkout is not a library of its own. Installing it builds a
metadata-only wheel, ``flax-suite``, whose requirements point at the
``packages/<name>`` folders of this same checkout (``file://`` URLs): the
``flax`` distribution (``packages/flax``, the drop-in for Flax) and the seven
packages it requires, so pip or uv install them all from the checkout and the
third-party libraries they declare from the index. Nothing is written into
the checkout. ``flax-suite`` has the ``flax`` distribution's version.

Extras: ``orbax`` (Orbax checkpoints), ``display`` (treescope for
``nnx.display``) and ``all`` (both).

An editable install or an sdist of the root is refused with a message that
says what to run instead.
"""

import base64
import hashlib
import pathlib
import tomllib
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAME = 'flax-suite'
PACKAGES = (
  'core',
  'serialization',
  'spmd',
  'linen',
  'nnx',
  'layers',
  'training',
)
EXTRAS = {
  'orbax': [('training', 'orbax')],
  'display': [('nnx', 'display')],
}
EXTRAS['all'] = [req for reqs in EXTRAS.values() for req in reqs]


def _version():
  path = ROOT / 'packages' / 'flax' / 'pyproject.toml'
  return tomllib.loads(path.read_text())['project']['version']


def _distribution(package):
  """``'flax-core'`` for ``'core'``; the drop-in ``'flax'`` is itself."""
  return package if package == 'flax' else f'flax-{package}'


def _requirement(package, extra=None, marker=None):
  folder = ROOT / 'packages' / package
  if not (folder / 'pyproject.toml').is_file():
    raise RuntimeError(
      f'{folder} is missing: `pip install .` must be run in a complete '
      'checkout of the repository.'
    )
  extras = f'[{extra}]' if extra else ''
  line = f'{_distribution(package)}{extras} @ {folder.as_uri()}'
  return f'{line} ; extra == "{marker}"' if marker else line


def _metadata():
  lines = [
    'Metadata-Version: 2.1',
    f'Name: {NAME}',
    f'Version: {_version()}',
    'Summary: Every distribution of the modular Flax monorepo, installed '
    'from this checkout.',
    'License: Apache-2.0',
    'Requires-Python: >=3.11',
  ]
  lines += [f'Requires-Dist: {_requirement(p)}' for p in ('flax', *PACKAGES)]
  for extra, requirements in EXTRAS.items():
    lines.append(f'Provides-Extra: {extra}')
    lines += [
      f'Requires-Dist: {_requirement(p, e, extra)}' for p, e in requirements
    ]
  return '\n'.join(lines) + '\n'


def _dist_info():
  return f'{NAME.replace("-", "_")}-{_version()}.dist-info'


def _files():
  return {
    'METADATA': _metadata(),
    'WHEEL': (
      'Wheel-Version: 1.0\n'
      'Generator: flax-suite-backend\n'
      'Root-Is-Purelib: true\n'
      'Tag: py3-none-any\n'
    ),
  }


def _record_line(path, data):
  digest = hashlib.sha256(data).digest()
  encoded = base64.urlsafe_b64encode(digest).rstrip(b'=').decode()
  return f'{path},sha256={encoded},{len(data)}'


def _write_wheel(wheel_directory):
  info = _dist_info()
  name = f'{NAME.replace("-", "_")}-{_version()}-py3-none-any.whl'
  records = []
  with zipfile.ZipFile(
    pathlib.Path(wheel_directory) / name, 'w', zipfile.ZIP_DEFLATED
  ) as wheel:
    for filename, text in _files().items():
      data = text.encode()
      wheel.writestr(f'{info}/{filename}', data)
      records.append(_record_line(f'{info}/{filename}', data))
    records.append(f'{info}/RECORD,,')
    wheel.writestr(f'{info}/RECORD', '\n'.join(records) + '\n')
  return name


# PEP 517 hooks.


def get_requires_for_build_wheel(config_settings=None):
  return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
  folder = pathlib.Path(metadata_directory) / _dist_info()
  folder.mkdir(parents=True, exist_ok=True)
  for filename, text in _files().items():
    (folder / filename).write_text(text)
  return folder.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
  return _write_wheel(wheel_directory)


_EDITABLE = (
  'The repository root has no editable install. For every package editable '
  'run `uv sync --all-packages` (a .venv in the checkout) or '
  '`pip install '
  + ' '.join(f'-e ./packages/{p}' for p in PACKAGES)
  + '`; for a regular install of everything run `pip install .`.'
)


def get_requires_for_build_editable(config_settings=None):
  return []


def build_editable(
  wheel_directory, config_settings=None, metadata_directory=None
):
  raise RuntimeError(_EDITABLE)


def prepare_metadata_for_build_editable(
  metadata_directory, config_settings=None
):
  raise RuntimeError(_EDITABLE)


def get_requires_for_build_sdist(config_settings=None):
  return []


def build_sdist(sdist_directory, config_settings=None):
  raise RuntimeError(
    'The repository root is not a distribution and has no sdist; build the '
    'packages instead, e.g. `python -m build packages/core`.'
  )
