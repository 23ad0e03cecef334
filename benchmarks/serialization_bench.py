"""Throughput of flax.serialization and msgpack checkpoints.

Compares, on a tree of about 256 MB of float32 arrays (plus small leaves):

* ``to_bytes`` with ``msgpack.packb`` of the same tree whose arrays are
  already raw ``bytes`` (the cost of writing those bytes as msgpack);
* ``from_bytes`` with ``msgpack.unpackb`` of those raw bytes;
* ``checkpoints.save_checkpoint`` / ``restore_checkpoint`` (msgpack backend,
  atomic write with fsync) with writing / reading a file of the same size
  (with fsync).

A throughput ratio is raw time / flax time (1.0 = as fast as the raw
operation; the target for bytes is >= 0.9).

  python benchmarks/serialization_bench.py [--mb 256] [--repeat 3]
"""

import argparse
import os
import shutil
import tempfile
import time

import msgpack
import numpy as np

from flax import serialization
from flax.training import checkpoints


def make_tree(total_mb: int):
  rng = np.random.default_rng(0)
  n_arrays = 64
  per_array = total_mb * 2**20 // (4 * n_arrays)
  tree = {}
  for i in range(n_arrays):
    layer = tree.setdefault(f'layer_{i // 4}', {})
    layer[f'kernel_{i % 4}'] = rng.standard_normal(per_array, np.float32)
    layer[f'bias_{i % 4}'] = np.zeros(256, np.float32)
  tree['step'] = 1000
  tree['name'] = 'bench'
  return tree


def raw_tree(tree):
  if isinstance(tree, dict):
    return {k: raw_tree(v) for k, v in tree.items()}
  if isinstance(tree, np.ndarray):
    return tree.tobytes()
  return tree


def best_time(fn, repeat):
  best = float('inf')
  result = None
  for _ in range(repeat):
    result = None  # free the previous result before timing the next call
    start = time.perf_counter()
    result = fn()
    best = min(best, time.perf_counter() - start)
  return best, result


def line(name, flax_s, raw_s, nbytes, target=None):
  ratio = raw_s / flax_s
  goal = f'  (target >= {target:.1f}x)' if target else ''
  print(
    f'{name:<26} flax {nbytes / flax_s / 2**30:6.2f} GiB/s   raw '
    f'{nbytes / raw_s / 2**30:6.2f} GiB/s   throughput ratio {ratio:5.2f}x'
    f'{goal}'
  )
  return ratio


def write_file(path, data):
  with open(path, 'wb') as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())


def read_file(path):
  with open(path, 'rb') as f:
    return f.read()


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--mb', type=int, default=256)
  parser.add_argument('--repeat', type=int, default=3)
  args = parser.parse_args()

  tree = make_tree(args.mb)
  target = {k: (dict(v) if isinstance(v, dict) else v) for k, v in tree.items()}
  raw = raw_tree(tree)
  nbytes = sum(
    a.nbytes
    for layer in tree.values()
    if isinstance(layer, dict)
    for a in layer.values()
  )
  print(f'tree: {nbytes / 2**20:.0f} MiB in 128 arrays; best of {args.repeat}')

  flax_s, data = best_time(lambda: serialization.to_bytes(tree), args.repeat)
  raw_s, raw_data = best_time(lambda: msgpack.packb(raw), args.repeat)
  ratios = {'to_bytes': line('to_bytes vs packb', flax_s, raw_s, nbytes, 0.9)}
  flax_s, restored = best_time(
    lambda: serialization.from_bytes(target, data), args.repeat
  )
  raw_s, _ = best_time(lambda: msgpack.unpackb(raw_data), args.repeat)
  ratios['from_bytes'] = line(
    'from_bytes vs unpackb', flax_s, raw_s, nbytes, 0.9
  )
  np.testing.assert_array_equal(
    restored['layer_3']['kernel_1'], tree['layer_3']['kernel_1']
  )
  restored = raw_data = None

  directory = tempfile.mkdtemp(prefix='flax-bench-')
  try:
    step = iter(range(10**6))
    flax_s, _ = best_time(
      lambda: checkpoints.save_checkpoint(
        directory, tree, next(step), backend='msgpack'
      ),
      args.repeat,
    )
    raw_path = os.path.join(directory, 'raw')
    raw_s, _ = best_time(lambda: write_file(raw_path, data), args.repeat)
    ratios['save'] = line('checkpoint save vs write', flax_s, raw_s, nbytes)
    flax_s, _ = best_time(
      lambda: checkpoints.restore_checkpoint(directory, target), args.repeat
    )
    raw_s, _ = best_time(lambda: read_file(raw_path), args.repeat)
    ratios['restore'] = line(
      'checkpoint restore vs read', flax_s, raw_s, nbytes
    )
  finally:
    shutil.rmtree(directory)
  ok = ratios['to_bytes'] >= 0.9 and ratios['from_bytes'] >= 0.9
  print('bytes throughput target met' if ok else 'bytes target NOT met')


if __name__ == '__main__':
  main()
