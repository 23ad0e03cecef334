"""Discovery: the plugin costs nothing until its backend is selected."""

import subprocess
import sys

import pytest


def _run(code):
  result = subprocess.run(
    [sys.executable, '-W', 'error', '-c', code], capture_output=True, text=True
  )
  assert result.returncode == 0, result.stderr
  return result.stdout.split()


def _loaded(*modules):
  return f'print(*[m in sys.modules for m in {modules!r}])'


def test_importing_nnx_imports_neither_plugin_nor_safetensors():
  out = _run(
    'import sys\n'
    'from flax import nnx\n'
    'nnx.Linear, nnx.Module\n' + _loaded('flax_safetensors', 'safetensors')
  )
  assert out == ['False', 'False']


def test_discovery_imports_only_the_hook_module():
  out = _run(
    'import sys\n'
    'from flax import nnx, plugins\n'
    'plugins.registry().load_all()\n'
    'print("safetensors" in plugins.backend_names("checkpoint"))\n'
    'hasattr(nnx, "NoSuchLayer")\n'
    + _loaded(
      'flax_safetensors.plugin', 'flax_safetensors.backend', 'safetensors'
    )
  )
  assert out == ['True', 'True', 'False', 'False']


def test_a_msgpack_save_does_not_load_it(tmp_path):
  out = _run(
    'import sys\n'
    'from flax.training import checkpoints\n'
    f'checkpoints.save_checkpoint({str(tmp_path)!r}, {{"a": 1}}, 0)\n'
    f'checkpoints.restore_checkpoint({str(tmp_path)!r}, None)\n'
    + _loaded('flax_safetensors', 'safetensors')
  )
  assert out == ['False', 'False']


@pytest.mark.parametrize(
  'select',
  [
    "backend='safetensors'",
    None,  # the environment variable
  ],
)
def test_selecting_it_loads_it(tmp_path, select, monkeypatch):
  if select is None:
    monkeypatch.setenv('FLAX_CHECKPOINT_BACKEND', 'safetensors')
  args = f', {select}' if select else ''
  out = _run(
    'import sys\n'
    'from flax.training import checkpoints\n'
    f'checkpoints.save_checkpoint({str(tmp_path)!r}, {{"a": 1}}, 0{args})\n'
    + _loaded('flax_safetensors.backend', 'safetensors')
  )
  assert out == ['True', 'True']


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
