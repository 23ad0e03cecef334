"""save_checkpoint's step rules: Orbax (the default) refuses an existing
step and adds an older one; msgpack refuses any step not newer than the
latest. keep prunes by step; overwrite replaces and drops newer steps."""

import os

import numpy as np
import report
import flax
from flax.training import checkpoints

tree = {'a': np.arange(3), 'step': 3}
for orbax in (True, False):
  with flax.config.temp_flip_flag('use_orbax_checkpointing', orbax):
    folder = os.path.abspath(f'ckpt_{orbax}')  # Orbax wants absolute paths
    checkpoints.save_checkpoint(folder, tree, step=4, keep=3)
    for step, overwrite in [(4, False), (3, False), (6, False), (5, False)]:
      label = f'orbax={orbax} step={step} overwrite={overwrite}'
      if (orbax and step == 4) or (not orbax and step in (3, 4, 5)):
        with report.raises(label):
          checkpoints.save_checkpoint(
            folder, tree, step=step, overwrite=overwrite, keep=3
          )
      else:
        checkpoints.save_checkpoint(
          folder, tree, step=step, overwrite=overwrite, keep=3
        )
      report.value(label + ' files', sorted(os.listdir(folder)))
    checkpoints.save_checkpoint(folder, tree, step=2, overwrite=True, keep=3)
    report.value(f'orbax={orbax} overwrite older', sorted(os.listdir(folder)))
