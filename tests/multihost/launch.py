"""Starts N local processes of ``worker.py`` that form one JAX job.

  python launch.py TASK WORKDIR [--processes 2] [--devices 4] [--timeout 240]

Each process gets ``--devices`` host CPU devices and joins a coordinator on a
free localhost port. The launcher waits for all of them with a bounded
timeout; when one exits with an error or the time runs out, it stops the
others and fails with that process's output, so a dead peer never leaves the
run hanging. Prints each process's ``RESULT`` line and exits 0 when all
succeed.
"""

import argparse
import dataclasses
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

WORKER = pathlib.Path(__file__).resolve().parent / 'worker.py'


class LaunchError(RuntimeError):
  """A process of the run failed, or the run did not finish in time."""


@dataclasses.dataclass
class ProcessResult:
  process_id: int
  returncode: int
  output: str

  @property
  def result(self):
    lines = [ln for ln in self.output.splitlines() if ln.startswith('RESULT ')]
    if not lines:
      raise LaunchError(
        f'process {self.process_id} printed no RESULT line:\n'
        + _tail(self.output)
      )
    return json.loads(lines[-1][len('RESULT ') :])


def free_port():
  with socket.socket() as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


def _tail(text, n=25):
  return '\n'.join(text.strip().splitlines()[-n:])


def _env(process_id, processes, devices, coordinator):
  env = dict(os.environ)
  env.update(
    JAX_PLATFORMS='cpu',
    JAX_NUMPY_RANK_PROMOTION='raise',
    # the session's own XLA flags (if any) plus this job's device count
    XLA_FLAGS=' '.join(
      f
      for f in os.environ.get('XLA_FLAGS', '').split()
      if not f.startswith('--xla_force_host_platform_device_count=')
    )
    + f' --xla_force_host_platform_device_count={devices}',
    MH_PROCESS_ID=str(process_id),
    MH_NUM_PROCESSES=str(processes),
    MH_COORDINATOR=coordinator,
    TF_CPP_MIN_LOG_LEVEL='3',
  )
  return env


def launch(
  task, workdir, processes=2, devices=4, timeout=240.0, only=None, env=None
):
  """Runs ``task`` in ``processes`` processes; returns their results.

  ``only`` starts just those process ids (to test a missing peer or
  coordinator); ``env`` adds environment variables.

  Raises:
    LaunchError: a process exited with an error (the others are stopped), or
      the run took longer than ``timeout`` seconds.
  """
  coordinator = f'localhost:{free_port()}'
  logs, procs = [], []
  started = range(processes) if only is None else only
  for pid in started:
    log = tempfile.TemporaryFile('w+')
    logs.append(log)
    procs.append(
      subprocess.Popen(
        [sys.executable, str(WORKER), task, str(workdir)],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env={**_env(pid, processes, devices, coordinator), **(env or {})},
      )
    )
  deadline = time.monotonic() + timeout
  failure = None
  try:
    while any(p.poll() is None for p in procs):
      failed = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
      if failed:
        failure = failed[0]
        break
      if time.monotonic() > deadline:
        raise LaunchError(
          f'{task}: the {processes} processes did not finish within '
          f'{timeout:.0f} s; stopped them'
        )
      time.sleep(0.2)
    else:
      failed = [i for i, p in enumerate(procs) if p.returncode != 0]
      failure = failed[0] if failed else None
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
      p.wait()
  outputs = []
  for log in logs:
    log.seek(0)
    outputs.append(log.read())
    log.close()
  ids = list(started)
  if failure is not None:
    raise LaunchError(
      f'{task}: process {ids[failure]} of {processes} exited with status '
      f'{procs[failure].returncode}; stopped the others. Its output:\n'
      + _tail(outputs[failure])
    )
  return [
    ProcessResult(i, p.returncode, out)
    for i, p, out in zip(ids, procs, outputs)
  ]


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('task')
  ap.add_argument('workdir')
  ap.add_argument('--processes', type=int, default=2)
  ap.add_argument('--devices', type=int, default=4)
  ap.add_argument('--timeout', type=float, default=240.0)
  a = ap.parse_args(argv)
  try:
    results = launch(a.task, a.workdir, a.processes, a.devices, a.timeout)
  except LaunchError as e:
    print(f'launch: {e}', file=sys.stderr)
    return 1
  for r in results:
    print(f'process {r.process_id}: {json.dumps(r.result, sort_keys=True)}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
