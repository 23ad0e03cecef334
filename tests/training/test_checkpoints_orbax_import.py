"""Importing flax.training.checkpoints makes orbax.checkpoint available."""

import subprocess
import sys


def test_importing_checkpoints_imports_orbax():
  code = (
    'import sys\n'
    'from flax.training import checkpoints\n'
    "ocp = sys.modules['orbax.checkpoint']\n"
    'import orbax\n'
    'print(checkpoints.ocp is ocp, orbax.checkpoint is ocp,\n'
    '      checkpoints.orbax_utils.__name__)\n'
  )
  out = subprocess.run(
    [sys.executable, '-c', code], capture_output=True, text=True, check=True
  )
  assert out.stdout.split() == ['True', 'True', 'flax.training.orbax_utils']
