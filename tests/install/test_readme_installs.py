"""Every install command of README.md works in a fresh virtualenv.

The commands are read from README.md (``sh`` code blocks and inline code
spans starting with ``pip install``), run from the repository root in a new
virtualenv, and the environment is checked: what the line promises imports
and works, what it leaves out is missing with an error naming its install
command. ``pip install ARGS`` runs as ``uv pip install ARGS`` (same
arguments, uv's cache makes it fast); the root install is also run with pip
itself to check that it leaves nothing behind in the checkout.

Run by ``nox -s install``; needs network access to the package index (or
uv's cache).
"""

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / 'README.md'
PACKAGES = (
  'core',
  'serialization',
  'spmd',
  'linen',
  'nnx',
  'layers',
  'training',
)

# What each command promises (code that must run) and which subpackages it
# must leave out.
NNX_MODEL = """
from flax import nnx
model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
assert model(jnp.ones((1, 2))).shape == (1, 3)
"""
LINEN_MODEL = """
from flax import linen as nn
params = nn.Dense(3).init(jax.random.key(0), jnp.ones((1, 2)))
assert params['params']['kernel'].shape == (2, 3)
"""
NNX_TRAINING = """
import optax
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
metrics = nnx.metrics.Average()
from flax.training import checkpoints
"""
LINEN_TRAINING = """
import optax
import orbax.checkpoint
from flax.training import checkpoints, train_state
state = train_state.TrainState.create(
  apply_fn=nn.Dense(3).apply, params=params, tx=optax.sgd(0.1)
)
assert int(state.step) == 0
"""
SERIALIZATION = """
from flax import serialization
data = serialization.to_bytes({'a': jnp.ones(2)})
assert serialization.msgpack_restore(data)['a'].tolist() == [1.0, 1.0]
"""
SPMD = """
from flax import spmd
init = spmd.with_logical_partitioning(jax.nn.initializers.zeros, ('a', 'b'))
import flax.spmd.linen
"""
EVERYTHING = NNX_MODEL + LINEN_MODEL + NNX_TRAINING + SERIALIZATION + SPMD
SAFETENSORS_PLUGIN = """
import os, tempfile
from flax.training import checkpoints
d = tempfile.mkdtemp()
checkpoints.save_checkpoint(d, {'w': jnp.ones(2)}, 1, backend='safetensors')
assert os.path.isfile(os.path.join(d, 'checkpoint_1', 'model.safetensors'))
restored = checkpoints.restore_checkpoint(d, None, backend='safetensors')
assert restored['w'].tolist() == [1.0, 1.0]
"""
PLUGIN = """
from flax import nnx
from flax.nnx import ScaleLayer
assert ScaleLayer(3, rngs=nnx.Rngs(0))(jnp.ones(3)).shape == (3,)
"""

# The `flax` distribution (the drop-in): what Flax 0.12.8 brings, and the
# version that libraries read.
DROP_IN = """
import importlib.metadata, flax, orbax.checkpoint, treescope
assert importlib.metadata.version('flax') == flax.__version__
assert flax.__version__.startswith('0.12.8+modular.'), flax.__version__
"""

EXPECTED = {
  'pip install -q nox uv': ('import nox, uv', None),
  'pip install .': (EVERYTHING + DROP_IN, ()),
  'pip install ./packages/core ./packages/nnx ./packages/layers': (
    NNX_MODEL,
    ('linen', 'training', 'serialization', 'spmd'),
  ),
  'pip install ./packages/core ./packages/linen ./packages/layers': (
    LINEN_MODEL,
    ('nnx', 'training', 'serialization', 'spmd'),
  ),
  'pip install ./packages/core ./packages/nnx ./packages/layers '
  './packages/serialization ./packages/training': (
    NNX_MODEL + NNX_TRAINING,
    ('linen', 'spmd'),
  ),
  'pip install ./packages/core ./packages/linen ./packages/layers '
  "./packages/serialization './packages/training[orbax]'": (
    LINEN_MODEL + LINEN_TRAINING,
    ('nnx', 'spmd'),
  ),
  'pip install ./packages/core ./packages/serialization': (
    SERIALIZATION,
    ('linen', 'nnx', 'layers', 'training', 'spmd'),
  ),
  'pip install ./packages/core ./packages/linen ./packages/layers '
  './packages/spmd': (
    LINEN_MODEL + SPMD,
    ('nnx', 'training', 'serialization'),
  ),
  'pip install ./packages/core ./packages/serialization ./packages/training '
  './plugins/flax-safetensors': (
    SAFETENSORS_PLUGIN,
    ('linen', 'nnx', 'layers', 'spmd'),
  ),
  'pip install ./packages/core ./packages/nnx ./tests/plugins/fixtures/good': (
    PLUGIN,
    ('linen', 'layers', 'training'),
  ),
}


def readme_commands():
  """``pip install`` commands of README.md, as written there."""
  text = README.read_text()
  commands = []
  blocks = re.findall(r'^```sh\n(.*?)^```', text, re.S | re.M)
  for line in '\n'.join(blocks).splitlines():
    for part in line.split('&&'):
      part = part.split('  #')[0].strip()
      if re.match(r'(python -m )?pip install ', part):
        commands.append(part.removeprefix('python -m '))
  prose = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
  commands += [
    span
    for span in re.findall(r'`([^`\n]+)`', prose)
    if span.startswith('pip install ')
  ]
  return list(dict.fromkeys(commands))


def _uv():
  found = shutil.which('uv')
  return [found] if found else [sys.executable, '-m', 'uv']


def _venv(path, *flags):
  subprocess.run([*_uv(), 'venv', '-q', *flags, str(path)], check=True)
  return path / 'bin' / 'python'


def _refresh():
  dists = [f'flax-{p}' for p in PACKAGES] + ['flax', 'flax-safetensors']
  return [f for d in dists for f in ('--refresh-package', d)]


def _check(python, code, cwd=ROOT):
  result = subprocess.run(
    [str(python), '-W', 'error', '-c', code],
    cwd=cwd,
    capture_output=True,
    text=True,
    env={**os.environ, 'JAX_PLATFORMS': 'cpu'},
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout


def _absent_check(missing):
  lines = ['import importlib']
  for package in missing:
    lines.append(
      textwrap.dedent(f"""
        try:
          importlib.import_module('flax.{package}')
        except ModuleNotFoundError as e:
          assert 'flax-{package}' in str(e), str(e)
          assert 'pip install ' in str(e), str(e)
        else:
          raise AssertionError('flax.{package} is installed')
      """)
    )
  return '\n'.join(lines)


def test_every_readme_command_is_checked():
  commands = readme_commands()
  assert 'pip install .' in commands
  unknown = [c for c in commands if c not in EXPECTED]
  assert not unknown, f'add what these README commands promise: {unknown}'
  stale = [c for c in EXPECTED if c not in commands]
  assert not stale, f'no longer in README.md: {stale}'


@pytest.mark.parametrize('command', list(EXPECTED))
def test_readme_install_command(command, tmp_path):
  python = _venv(tmp_path / 'venv')
  words = shlex.split(command)
  assert words[:2] == ['pip', 'install']
  subprocess.run(
    [*_uv(), 'pip', 'install', '-q', '--python', str(python), *words[2:]]
    + (_refresh() if any('.' in w for w in words) else []),
    cwd=ROOT,
    check=True,
  )
  code, missing = EXPECTED[command]
  if missing is None:
    _check(python, code)
    return
  _check(
    python, 'import jax, jax.numpy as jnp\n' + code + _absent_check(missing)
  )


def test_readme_error_sample_is_what_a_checkout_install_prints(tmp_path):
  """The ``nnx.Optimizer`` error shown in README.md, after the NNX line."""
  (sample,) = re.findall(r'^AttributeError: .*$', README.read_text(), re.M)
  python = _venv(tmp_path / 'venv')
  subprocess.run(
    [*_uv(), 'pip', 'install', '-q', '--python', str(python)]
    + ['./packages/core', './packages/nnx', './packages/layers']
    + _refresh(),
    cwd=ROOT,
    check=True,
  )
  out = _check(
    python,
    'from flax import nnx\n'
    'try:\n  nnx.Optimizer\n'
    'except AttributeError as e:\n  print(f"{type(e).__name__}: {e}")\n',
  )
  assert out.strip() == sample


def _stray(root):
  return sorted(
    p.name
    for p in root.iterdir()
    if p.name == 'build' or p.name.endswith('.egg-info')
  )


def test_root_install_with_pip_leaves_nothing_behind(tmp_path):
  python = _venv(tmp_path / 'venv', '--seed')
  before = _stray(ROOT)
  pip = [str(python), '-m', 'pip', 'install', '-q', '--no-deps']
  subprocess.run([*pip, '.'], cwd=ROOT, check=True)
  assert _stray(ROOT) == before
  site = next((tmp_path / 'venv' / 'lib').glob('python*/site-packages'))
  names = sorted(p.name for p in site.iterdir())
  assert 'packages' not in names and not any('UNKNOWN' in n for n in names)
  out = _check(
    python,
    'import importlib.metadata as m\n'
    'd = m.distribution("flax-suite")\n'
    'print(*sorted(r.split(" @ ")[0] for r in d.requires if "extra" not in r))\n'
    'print(*[f for f in d.files if ".dist-info" not in str(f)])',
    cwd=tmp_path,
  )
  wanted = ' '.join(sorted(['flax', *(f'flax-{p}' for p in PACKAGES)]))
  assert out.splitlines() == [wanted, '']
  # An editable install of the root is refused with what to run instead.
  result = subprocess.run(
    [*pip, '-e', '.'], cwd=ROOT, capture_output=True, text=True
  )
  assert result.returncode != 0
  assert 'uv sync --all-packages' in result.stdout + result.stderr
