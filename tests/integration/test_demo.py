"""The README's main demo trains, checkpoints and resumes, in NNX and Linen."""

import pathlib
import subprocess
import sys

import pytest

DEMO = pathlib.Path(__file__).parents[2] / 'examples' / 'digits_demo.py'


def run_demo(*args):
  result = subprocess.run(
    [sys.executable, str(DEMO), *args],
    capture_output=True,
    text=True,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  # Output into a pipe: no colour codes, no progress bars (carriage
  # returns), and no line wrapped at 80 columns.
  for stream in (result.stdout, result.stderr):
    assert '\x1b' not in stream and '\r' not in stream, stream[-2000:]
  assert any(len(line) > 80 for line in result.stdout.splitlines())
  return result.stdout


@pytest.mark.parametrize('api', ['nnx', 'linen'])
def test_demo_trains_and_resumes(tmp_path, api):
  flags = ['--linen'] if api == 'linen' else []
  # One epoch, then a resumed second: the demo's whole path at the least
  # training (an epoch already reaches ~90%).
  first = run_demo(*flags, '--epochs', '1', '--out', str(tmp_path))
  assert 'training from scratch' in first
  assert 'CNN parameters' in first
  accuracy = float(first.split('Test accuracy: ')[1].split('%')[0])
  assert accuracy > 60.0
  assert (tmp_path / f'learning_curve_{api}.png').stat().st_size > 1000
  assert (tmp_path / f'checkpoints_{api}' / 'checkpoint_1').exists()

  second = run_demo(*flags, '--epochs', '2', '--out', str(tmp_path))
  assert 'Resuming from checkpoint' in second
  assert 'epoch 1 done' in second
  assert 'epoch  2:' in second and 'epoch  1:' not in second
  assert (tmp_path / f'checkpoints_{api}' / 'checkpoint_2').exists()
