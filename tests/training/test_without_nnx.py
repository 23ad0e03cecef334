"""flax-training imports without flax-nnx (its NNX parts are the [nnx]
extra, imported only when used)."""

import subprocess
import sys

CODE = """
import sys
sys.modules['flax.nnx'] = None  # as if flax-nnx were not installed
import flax.training
from flax.training import train_state, checkpoints, common_utils
import flax.jax_utils
import flax._plugins.training as plugin
names = {(e.namespace, e.name) for e in plugin.flax_exports()}
print(('flax.nnx', 'Optimizer') in names and ('flax', 'training') in names)
try:
  import flax.training.nnx.optimizer
except ImportError:
  print('nnx parts need flax-nnx')
"""


def test_flax_training_imports_without_flax_nnx():
  out = subprocess.run(
    [sys.executable, '-c', CODE], capture_output=True, text=True, check=True
  )
  assert out.stdout.split('\n')[:2] == ['True', 'nnx parts need flax-nnx']
