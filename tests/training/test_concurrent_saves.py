"""Two processes saving msgpack checkpoints into one directory at once."""

import os
import subprocess
import sys
import textwrap

import numpy as np

import flax
from flax.training import checkpoints

ROUNDS = 20
SIZE = 1_000_000

# Saves step ``writer + 1`` into each round's directory, both writers
# starting together (a file barrier per round), and prints what happened.
WRITER = textwrap.dedent(
  """
  import os, sys, time
  import numpy as np
  import flax
  from flax import errors
  from flax.training import checkpoints

  root, writer, rounds, size = sys.argv[1], int(sys.argv[2]), *map(
      int, sys.argv[3:5])
  step = writer + 1
  with flax.config.temp_flip_flag('use_orbax_checkpointing', False):
    for r in range(rounds):
      d = os.path.join(root, f'round_{r}')
      os.makedirs(d, exist_ok=True)
      open(os.path.join(root, f'ready_{r}_{writer}'), 'w').close()
      while not os.path.exists(os.path.join(root, f'ready_{r}_{1 - writer}')):
        time.sleep(0.001)
      value = float(step * 1000 + r)
      tree = {'step': step, 'round': r, 'a': np.full(size, value, np.float32),
              'b': np.full(size, -value, np.float32)}
      try:
        checkpoints.save_checkpoint(d, tree, step=step, keep=100)
        print(r, 'saved', flush=True)
      except errors.InvalidCheckpointError as e:
        print(r, 'outdated', 'outdated checkpoint' in str(e), flush=True)
      except Exception as e:
        print(r, 'error', type(e).__name__, flush=True)
  """
)


def test_two_processes_saving_into_one_directory(tmp_path):
  env = {**os.environ, 'JAX_PLATFORMS': 'cpu'}
  procs = [
    subprocess.Popen(
      [sys.executable, '-c', WRITER, str(tmp_path), str(w), str(ROUNDS)]
      + [str(SIZE)],
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
      env=env,
    )
    for w in (0, 1)
  ]
  outputs = [p.communicate(timeout=300) for p in procs]
  for proc, (_, err) in zip(procs, outputs):
    assert proc.returncode == 0, err
  results = [
    {int(k): v for k, v in (line.split(' ', 1) for line in out.splitlines())}
    for out, _ in outputs
  ]
  with flax.config.temp_flip_flag('use_orbax_checkpointing', False):
    for r in range(ROUNDS):
      d = tmp_path / f'round_{r}'
      outcomes = [results[0][r], results[1][r]]
      # Step 2 never loses: it is never outdated. Step 1 is outdated only
      # when step 2 was published first, and then says so.
      assert outcomes[1] == 'saved', (r, outcomes)
      assert outcomes[0] in ('saved', 'outdated True'), (r, outcomes)
      steps = checkpoints.available_steps(d)
      assert steps == ([1, 2] if outcomes[0] == 'saved' else [2]), (r, steps)
      # Every published file holds its own step's data, whole.
      for step in steps:
        state = checkpoints.restore_checkpoint(d, None, step=step)
        value = step * 1000 + r
        assert (state['step'], state['round']) == (step, r)
        np.testing.assert_array_equal(state['a'], np.full(SIZE, value))
        np.testing.assert_array_equal(state['b'], np.full(SIZE, -value))
      assert checkpoints.latest_checkpoint(d) == str(d / 'checkpoint_2')
      # No temporary file is left behind.
      assert sorted(os.listdir(d)) == [f'checkpoint_{s}' for s in steps]
