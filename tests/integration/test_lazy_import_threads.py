"""First use of lazily resolved names from many threads at once.

Each run imports Flax afresh, so every name is resolved for the first time
while eight threads race for it. The runs are forks of one interpreter that
has imported jax and numpy (never Flax): a fork starts with no Flax module
loaded, as a new interpreter does, without paying a jax import per run.
"""

import json
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


# Forks RUNS children, AT_ONCE at a time; each runs SCRIPT as __main__ with
# its stdout and stderr in files, and the parent prints one JSON line per run:
# [exit status, stdout, stderr].
FORKER = textwrap.dedent(
  """
  import json, os, pathlib, sys, traceback
  import jax, jax.numpy, numpy  # imported once; no fork inherits Flax
  assert not [m for m in sys.modules if m == 'flax' or m.startswith('flax.')]
  script, runs, at_once, tmp = sys.argv[1:]
  runs, at_once = int(runs), int(at_once)

  def child(i):
    for fd, ext in ((1, 'out'), (2, 'err')):
      name = os.path.join(tmp, f'{i}.{ext}')
      os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT, 0o600), fd)
    code = 1
    try:
      exec(compile(script, '<run>', 'exec'), {'__name__': '__main__'})
      code = 0
    except BaseException:
      traceback.print_exc()
    finally:
      sys.stdout.flush()
      sys.stderr.flush()
      os._exit(code)

  running, codes = {}, {}
  for i in range(runs):
    while len(running) >= at_once:
      pid, status = os.wait()
      codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
      child(i)
    running[pid] = i
  while running:
    pid, status = os.wait()
    codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
  for i in range(runs):
    out, err = (pathlib.Path(tmp, f'{i}.{e}').read_text() for e in ('out', 'err'))
    print(json.dumps([codes[i], out, err]))
  """
)


def test_eight_threads_first_use_in_fifty_fresh_processes(tmp_path):
  proc = subprocess.run(
    [sys.executable, '-c', FORKER, SCRIPT, str(RUNS), str(AT_ONCE), tmp_path],
    capture_output=True,
    text=True,
    env={**os.environ, 'JAX_PLATFORMS': 'cpu'},
    timeout=600,
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = [json.loads(line) for line in proc.stdout.splitlines()]
  assert len(results) == RUNS
  problems = [
    (code, out.strip(), err[-500:])
    for code, out, err in results
    if code != 0 or out.strip() != 'ok'
  ]
  assert not problems, problems
