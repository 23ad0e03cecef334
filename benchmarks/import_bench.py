"""Import cost of Flax namespaces, as a ratio to ``import jax``.

Each import runs in a fresh interpreter. Runs of ``import jax`` and of the
Flax import alternate, and the best run of each counts.
"""

import subprocess
import sys
import time

RUNS = 9
CASES = {
  'import flax': 'import flax',
  'from flax import nnx': 'from flax import nnx',
  'from flax import linen': 'from flax import linen',
}


def run_time(code):
  start = time.perf_counter()
  subprocess.run([sys.executable, '-c', code], check=True)
  return time.perf_counter() - start


def main():
  run_time('import jax')  # warm the file cache
  for name, code in CASES.items():
    base = flax = float('inf')
    for _ in range(RUNS):
      base = min(base, run_time('import jax'))
      # Importing the namespace includes importing jax where it needs it.
      flax = min(flax, run_time(f'import jax; {code}'))
    print(
      f'{name:<24} {flax * 1e3:7.0f} ms  import jax {base * 1e3:5.0f} ms  '
      f'ratio {flax / base:5.2f}x  (target <= 1.10x)'
    )


if __name__ == '__main__':
  main()
