"""Runs scenarios in forks of one warm interpreter (started by runner.py).

Importing jax takes most of a short scenario's time. This server imports
jax and numpy once (without starting a backend), then, for each request
read from stdin, forks a child that runs one scenario exactly as
``python SCRIPT ARGS...`` would (``__main__``, ``sys.argv``, working
directory, stdout and stderr in files) and reports its exit status.

Started with ``--warm``, it also imports Flax (NNX, Linen and their layers)
and optax before forking: the runner uses such a server for scenarios that
do not configure Flax through environment variables before importing it
(those get a server without ``--warm``, so they see a fresh Flax).

Protocol, one JSON object a line. Request: ``{"script", "args", "cwd",
"stdout", "stderr", "timeout"}``; answer: ``{"returncode"}`` (-1 when the
scenario ran past ``timeout`` seconds and was killed).
"""

import json
import os
import signal
import sys
import time
import traceback

import jax  # noqa: F401  (imported once here; forks reuse it)
import jax.numpy  # noqa: F401
import numpy  # noqa: F401

try:
  # What jax imports at a process's first lowering (the MHLO dialect
  # bindings, ~0.1-0.4 s): once here instead of in every fork. Pure Python
  # and C bindings; no backend starts.
  import jaxlib.mlir.dialects.builtin  # noqa: F401
  import jaxlib.mlir.dialects.mhlo  # noqa: F401
except ImportError:
  pass


def _child(request) -> int:
  """Runs the scenario in this (forked) process; returns its exit status."""
  import runpy

  os.chdir(request['cwd'])
  with open(os.devnull) as null:
    os.dup2(null.fileno(), 0)
  with open(request['stdout'], 'w') as out:
    os.dup2(out.fileno(), 1)
  with open(request['stderr'], 'w') as err:
    os.dup2(err.fileno(), 2)
  script = request['script']
  sys.argv = [script, *request['args']]
  sys.path[0] = os.path.dirname(script)
  try:
    runpy.run_path(script, run_name='__main__')
  except SystemExit as e:
    code = e.code
    if code is None:
      return 0
    if isinstance(code, int):
      return code
    print(code, file=sys.stderr)
    return 1
  except BaseException:
    traceback.print_exc()
    return 1
  return 0


def _finalize():
  """What a normal interpreter exit does before the process ends: wait for
  non-daemon threads (e.g. asynchronous checkpoint writers), then run the
  ``atexit`` handlers."""
  import atexit
  import threading

  try:
    threading._shutdown()
  finally:
    atexit._run_exitfuncs()


def _wait(pid, timeout) -> int:
  deadline = time.monotonic() + timeout
  while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
      return os.waitstatus_to_exitcode(status)
    if time.monotonic() > deadline:
      os.kill(pid, signal.SIGKILL)
      os.waitpid(pid, 0)
      return -1
    time.sleep(0.01)


def _warm_up():
  """Imports Flax, its layers and optax once, as most scenarios do."""
  try:
    from flax import linen, nnx

    nnx.Linear, linen.Dense  # noqa: B018  (resolves the layer plugins)
    import optax  # noqa: F401
  except ImportError:
    pass


def main():
  if '--warm' in sys.argv[1:]:
    _warm_up()
  channel = sys.stdout
  for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
      code = 1
      try:
        code = _child(request)
        _finalize()
      finally:
        try:
          sys.stdout.flush()
          sys.stderr.flush()
        finally:
          os._exit(code)
    code = _wait(pid, request['timeout'])
    channel.write(json.dumps({'returncode': code}) + '\n')
    channel.flush()


if __name__ == '__main__':
  main()
