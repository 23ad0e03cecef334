"""First use of lazily resolved names from many threads at once.

Each run is a fresh interpreter, so every name is resolved for the first
time while eight threads race for it.
"""

import concurrent.futures
import os
import subprocess
import sys
import textwrap

RUNS = 50
AT_ONCE = 4

SCRIPT = textwrap.dedent(
  """
  import threading
  from flax import linen as nn
  from flax import nnx

  LINEN = ['dtypes', 'Dense', 'attention', 'Dropout', 'initializers', 'Conv',
           'stochastic', 'BatchNorm', 'linear', 'LayerNorm', 'Embed',
           'avg_pool', 'relu', 'LSTMCell', 'MultiHeadDotProductAttention']
  NNX = ['Linear', 'initializers', 'Conv', 'Dropout', 'BatchNorm', 'relu',
         'LayerNorm', 'Embed', 'MultiHeadAttention', 'LSTMCell', 'avg_pool']
  failures = []
  barrier = threading.Barrier(8)

  def work(i):
    barrier.wait()
    try:
      for k in range(len(LINEN)):
        getattr(nn, LINEN[(2 * i + k) % len(LINEN)])
      for k in range(len(NNX)):
        getattr(nnx, NNX[(i + k) % len(NNX)])
    except BaseException as e:
      failures.append(f'{type(e).__name__}: {e}')

  threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  print('\\n'.join(failures) or 'ok')
  """
)


def _run(_):
  return subprocess.run(
    [sys.executable, '-c', SCRIPT],
    capture_output=True,
    text=True,
    env={**os.environ, 'JAX_PLATFORMS': 'cpu'},
    timeout=300,
  )


def test_eight_threads_first_use_in_fifty_fresh_processes():
  with concurrent.futures.ThreadPoolExecutor(AT_ONCE) as pool:
    results = list(pool.map(_run, range(RUNS)))
  problems = [
    (r.returncode, r.stdout.strip(), r.stderr[-500:])
    for r in results
    if r.returncode != 0 or r.stdout.strip() != 'ok'
  ]
  assert not problems, problems
