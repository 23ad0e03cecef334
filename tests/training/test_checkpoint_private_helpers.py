"""Private helpers of flax.training.checkpoints that code outside Flax
imports by name."""

import os

import jax.numpy as jnp
import numpy as np
from flax.training import checkpoints


def test_all_checkpoints_in_step_order(tmp_path):
  for step in (1, 10, 2):
    checkpoints.save_checkpoint(tmp_path, {'a': np.ones(1)}, step=step, keep=5)
  names = [os.path.basename(p) for p in checkpoints._all_checkpoints(tmp_path)]
  assert names == ['checkpoint_1', 'checkpoint_2', 'checkpoint_10']
  assert checkpoints._all_checkpoints(tmp_path / 'missing') == []


def test_allowempty_listdir(tmp_path):
  assert checkpoints._allowempty_listdir(str(tmp_path / 'missing')) == []
  (tmp_path / 'f').write_text('')
  assert checkpoints._allowempty_listdir(str(tmp_path)) == ['f']


def test_is_multiprocess_array():
  assert not checkpoints._is_multiprocess_array(jnp.ones(2))
  assert not checkpoints._is_multiprocess_array(np.ones(2))
  assert not checkpoints._is_multiprocess_array(1)
