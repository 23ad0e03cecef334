"""Discovery: the plugin costs nothing until its backend is selected.

Each check runs in a fresh interpreter, where nothing is imported yet.
"""

import os
import subprocess
import sys

import pytest


def _run(code, *args, env=None):
  result = subprocess.run(
    [sys.executable, '-W', 'error', '-c', code, *map(str, args)],
    capture_output=True,
    text=True,
    env={**os.environ, **(env or {})},
  )
  assert result.returncode == 0, result.stderr
  return result.stdout.split()


_LOADED = (
  'def loaded():\n'
  '  names = ("flax_safetensors", "flax_safetensors.plugin",\n'
  '           "flax_safetensors.backend", "safetensors")\n'
  '  print(",".join(n for n in names if n in sys.modules) or "-")\n'
)


def test_nothing_is_imported_until_the_backend_is_selected(tmp_path):
  out = _run(
    'import sys\n' + _LOADED + 'from flax import nnx\n'
    'nnx.Linear, nnx.Module\n'
    'loaded()\n'
    'from flax.training import checkpoints\n'
    'checkpoints.save_checkpoint(sys.argv[1], {"a": 1}, 0)\n'
    'checkpoints.restore_checkpoint(sys.argv[1], None)\n'
    'loaded()\n'
    'from flax import plugins\n'
    'hasattr(nnx, "NoSuchLayer")\n'  # imports every plugin's hook module
    'print("safetensors" in plugins.backend_names("checkpoint"))\n'
    'loaded()\n',
    tmp_path,
  )
  assert out == [
    '-',  # from flax import nnx
    '-',  # a msgpack save and restore
    'True',
    'flax_safetensors,flax_safetensors.plugin',  # discovery: the hooks only
  ]


@pytest.mark.parametrize('how', ['argument', 'environment'])
def test_selecting_the_backend_loads_it(tmp_path, how):
  select = ", backend='safetensors'" if how == 'argument' else ''
  env = {'FLAX_CHECKPOINT_BACKEND': 'safetensors'} if how != 'argument' else {}
  out = _run(
    'import os, sys, numpy as np\n' + _LOADED + 'from flax import nnx\n'
    'from flax.training import checkpoints\n'
    'd = sys.argv[1]\n'
    f'checkpoints.save_checkpoint(d, {{"v": np.arange(3)}}, 5{select})\n'
    'loaded()\n'
    'print(os.listdir(os.path.join(d, "checkpoint_5")))\n'
    f'print(checkpoints.restore_checkpoint(d, None{select})["v"].tolist())\n',
    tmp_path,
    env=env,
  )
  assert out == [
    'flax_safetensors,flax_safetensors.plugin,flax_safetensors.backend,'
    'safetensors',
    "['model.safetensors']",
    '[0,',
    '1,',
    '2]',
  ]


def test_report_lists_the_plugin():
  result = subprocess.run(
    [sys.executable, '-m', 'flax.plugins'], capture_output=True, text=True
  )
  assert result.returncode == 0, result.stderr
  lines = result.stdout.splitlines()
  at = lines.index('flax-safetensors 0.1.0 [third-party] ok')
  assert lines[at + 1 : at + 4] == [
    '  entry point: flax-safetensors = flax_safetensors.plugin',
    '  checkpoint backends (1):',
    '    safetensors (priority 0) -> '
    'flax_safetensors.backend:safetensors_backend',
  ]
