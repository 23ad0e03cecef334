"""A msgpack checkpoint written by one implementation restores in the other."""

import jax.numpy as jnp
import report
from flax import config
from flax.training import checkpoints

config.update('flax_use_orbax_checkpointing', False)
target = {
  'params': {'w': jnp.zeros((2, 3)), 'b': jnp.zeros(3)},
  'step': 0,
}
if report.phase() == 'write':
  state = {
    'params': {'w': jnp.arange(6.0).reshape(2, 3), 'b': jnp.ones(3)},
    'step': 3,
  }
  checkpoints.save_checkpoint('ckpt', state, step=3, keep=2)
  checkpoints.save_checkpoint('ckpt', state, step=5, keep=2)
  report.value('saved', True)
else:
  report.value('latest', checkpoints.latest_checkpoint('ckpt').split('/')[-1])
  report.tree('restored-target', checkpoints.restore_checkpoint('ckpt', target))
  report.tree(
    'restored-step3', checkpoints.restore_checkpoint('ckpt', target, step=3)
  )
