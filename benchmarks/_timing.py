"""Timing helpers shared by the benchmark scripts (not a benchmark itself)."""

import time

import jax


def per_call(fn, *args, number=200, repeat=7, warmup=3):
  """Best-of-``repeat`` seconds per call of ``fn(*args)``, outputs blocked.

  ``fn`` may return new arguments for the next call (a train step returning
  its new state): when it returns a tuple of the same length as ``args``
  they are fed back in.
  """

  def loop(args, count):
    for _ in range(count):
      out = fn(*args)
      if isinstance(out, tuple) and len(out) == len(args):
        args = out
    jax.block_until_ready(out)
    return args

  args = loop(args, warmup)
  best = float('inf')
  for _ in range(repeat):
    start = time.perf_counter()
    args = loop(args, number)
    best = min(best, (time.perf_counter() - start) / number)
  return best


def report(name, flax_time, raw_time, target=None):
  """Prints one benchmark line with the ratio flax/raw."""
  ratio = flax_time / raw_time
  goal = f'  (target <= {target:.2f}x)' if target else ''
  print(
    f'{name:<44} flax {flax_time * 1e6:9.1f} us  raw {raw_time * 1e6:9.1f} us'
    f'  ratio {ratio:5.2f}x{goal}'
  )
  return ratio
