"""An Orbax checkpoint saved through flax.training restores in the other."""

import os

import jax.numpy as jnp
import report
from flax.training import checkpoints

target = {'params': {'w': jnp.zeros((2, 3)), 'b': jnp.zeros(3)}, 'step': 0}
path = os.path.abspath('orbax_ckpt')
if report.phase() == 'write':
  state = {
    'params': {'w': jnp.arange(6.0).reshape(2, 3), 'b': jnp.ones(3)},
    'step': 4,
  }
  checkpoints.save_checkpoint(path, state, step=4)
  report.value('saved', True)
else:
  report.value('latest', os.path.basename(checkpoints.latest_checkpoint(path)))
  report.tree('restored', checkpoints.restore_checkpoint(path, target))
