"""Timing helpers shared by the benchmark scripts (not a benchmark itself)."""

import time

import jax


def _loop(fn, args, count):
  """Calls ``fn`` ``count`` times, feeding back outputs shaped like ``args``.

  A train step returning its new state (a tuple as long as its arguments)
  gets that state as the arguments of the next call.
  """
  out = None
  for _ in range(count):
    out = fn(*args)
    if isinstance(out, tuple) and len(out) == len(args):
      args = out
  jax.block_until_ready(out)
  return args


def per_call_pair(fn_a, args_a, fn_b, args_b, number=200, repeat=9, warmup=3):
  """Best-of-``repeat`` seconds per call of two functions, timed in turns.

  Alternating the two measurements keeps a change of machine load from
  favouring either side.
  """
  args_a = _loop(fn_a, args_a, warmup)
  args_b = _loop(fn_b, args_b, warmup)
  best_a = best_b = float('inf')
  for _ in range(repeat):
    start = time.perf_counter()
    args_a = _loop(fn_a, args_a, number)
    best_a = min(best_a, (time.perf_counter() - start) / number)
    start = time.perf_counter()
    args_b = _loop(fn_b, args_b, number)
    best_b = min(best_b, (time.perf_counter() - start) / number)
  return best_a, best_b


def per_call(fn, *args, number=200, repeat=7, warmup=3):
  """Best-of-``repeat`` seconds per call of ``fn(*args)``, outputs blocked."""
  args = _loop(fn, args, warmup)
  best = float('inf')
  for _ in range(repeat):
    start = time.perf_counter()
    args = _loop(fn, args, number)
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
