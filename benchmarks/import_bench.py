"""Import cost of Flax namespaces, as a ratio to ``import jax``.

Each import runs in a fresh interpreter; the best of several runs counts.
"""

import subprocess
import sys
import time

RUNS = 7
CASES = {
  'import flax': 'import flax',
  'from flax import nnx': 'from flax import nnx',
  'from flax import linen': 'from flax import linen',
}


def best_time(code):
  best = float('inf')
  for _ in range(RUNS):
    start = time.perf_counter()
    subprocess.run([sys.executable, '-c', code], check=True)
    best = min(best, time.perf_counter() - start)
  return best


def main():
  base = best_time('import jax')
  print(f'import jax: {base * 1e3:.0f} ms (best of {RUNS})')
  for name, code in CASES.items():
    # Importing the namespace includes importing jax where it needs it.
    t = best_time(f'import jax; {code}')
    print(f'{name:<24} {t * 1e3:7.0f} ms  ratio {t / base:5.2f}x import jax')


if __name__ == '__main__':
  main()
