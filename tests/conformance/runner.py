"""Runs the conformance scenarios under two Flax installations and compares.

  python tests/conformance/runner.py --reference REF_PYTHON \
      [--project PYTHON] [-k SUBSTRING ...] [-j JOBS] [-v]

Every ``*.py`` under ``tests/conformance/<group>/`` (files starting with
``_`` excluded) is a scenario. Each runs in a fresh process of each
interpreter, on CPU with 8 host devices and ``JAX_NUMPY_RANK_PROMOTION=raise``,
with this folder on ``sys.path`` so ``import report`` works. The records the
two runs print (see ``report.py``) must agree: same labels in the same order,
and per record the comparison its kind defines. A scenario that crashes on
either side fails. Reference results are cached under ``--cache`` keyed by the
scenario's text, ``report.py`` and the reference interpreter, so unchanged
scenarios only rerun on the project side.

The exit status is 0 when every scenario agrees, 1 otherwise. The last line
is ``conformance: P passed, F failed, of N scenarios``.
"""

import argparse
import concurrent.futures
import dataclasses
import hashlib
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import threading

HERE = pathlib.Path(__file__).resolve().parent
MARKER = '@@conformance@@ '


@dataclasses.dataclass
class Run:
  """What one interpreter reported for one scenario."""

  records: list
  returncode: int
  stderr: str


@dataclasses.dataclass
class Outcome:
  scenario: str
  problems: list
  reference: str = 'live'  # where the reference result came from


def scenarios(patterns=()):
  found = sorted(
    p
    for p in HERE.glob('*/*.py')
    if not p.name.startswith('_') and not p.parent.name.startswith('_')
  )
  if patterns:
    found = [
      p for p in found if any(k in str(p.relative_to(HERE)) for k in patterns)
    ]
  return found


def _env(devices):
  env = dict(os.environ)
  env.pop('PYTHONPATH', None)
  env.update(
    JAX_PLATFORMS='cpu',
    JAX_NUMPY_RANK_PROMOTION='raise',
    TF_CPP_MIN_LOG_LEVEL='3',
    # flags given to the runner (e.g. the nox session's optimization
    # level) are kept; the device count is the scenario group's
    XLA_FLAGS=' '.join(
      [
        *os.environ.get('XLA_FLAGS', '').split(),
        f'--xla_force_host_platform_device_count={devices}',
      ]
    ),
    PYTHONPATH=str(HERE),
    PYTHONHASHSEED='0',
    PYTHONNOUSERSITE='1',
  )
  return env


def _records(stdout):
  return [
    json.loads(line[len(MARKER) :])
    for line in stdout.splitlines()
    if line.startswith(MARKER)
  ]


class _ForkServer:
  """One warm interpreter that runs scenarios in forks (``_forkserver.py``).

  Saves the interpreter start and the jax import of every run; a scenario
  sees the same process state as under ``python SCRIPT``.
  """

  def __init__(self, python, warm=False):
    self.proc = subprocess.Popen(
      [python, str(HERE / '_forkserver.py'), *(['--warm'] if warm else [])],
      stdin=subprocess.PIPE,
      stdout=subprocess.PIPE,
      stderr=subprocess.DEVNULL,
      text=True,
      env=_env(8),
      cwd=HERE,
    )

  def run(self, script, cwd, timeout, args):
    """The scenario's ``Run``, or None when the server is gone."""
    # The output files live outside the scenario's (empty) working folder.
    with tempfile.TemporaryDirectory() as io_dir:
      out = pathlib.Path(io_dir, 'stdout')
      err = pathlib.Path(io_dir, 'stderr')
      request = dict(
        script=str(script),
        args=list(args),
        cwd=str(cwd),
        stdout=str(out),
        stderr=str(err),
        timeout=timeout,
      )
      try:
        self.proc.stdin.write(json.dumps(request) + '\n')
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
      except (BrokenPipeError, OSError):
        return None
      if not answer:
        return None
      code = json.loads(answer)['returncode']
      stdout = out.read_text(errors='replace') if out.exists() else ''
      stderr = err.read_text(errors='replace') if err.exists() else ''
    if code == -1:
      stderr = f'timed out after {timeout} s\n{stderr}'
    return Run(_records(stdout), code, stderr)

  def close(self):
    if self.proc.poll() is None:
      self.proc.stdin.close()
      self.proc.wait()


class _ForkServers:
  """Fork servers per (thread, interpreter); ``None`` python disables them."""

  def __init__(self):
    self.enabled = True
    self._local = threading.local()
    self._all = []
    self._lock = threading.Lock()

  def get(self, python, warm=False):
    if not self.enabled:
      return None
    servers = self._local.__dict__.setdefault('servers', {})
    key = (python, warm)
    if key not in servers:
      servers[key] = _ForkServer(python, warm)
      with self._lock:
        self._all.append(servers[key])
    return servers[key]

  def close(self):
    with self._lock:
      for server in self._all:
        server.close()
      self._all.clear()


FORK_SERVERS = _ForkServers()


def _run_in(python, script, cwd, timeout, *args):
  """Runs ``script`` under ``python`` in ``cwd``: in a fork of a warm
  interpreter when fork servers are on, else in a new process."""
  server = FORK_SERVERS.get(python, warm=may_preload(script))
  if server is not None:
    result = server.run(script, cwd, timeout, args)
    if result is not None:
      return result
  try:
    proc = subprocess.run(
      [python, str(script), *args],
      capture_output=True,
      text=True,
      timeout=timeout,
      env=_env(8),
      cwd=cwd,
    )
  except subprocess.TimeoutExpired:
    return Run([], -1, f'timed out after {timeout} s')
  return Run(_records(proc.stdout), proc.returncode, proc.stderr)


def run_one(python, script, timeout, reader=None):
  """Runs ``script`` under ``python`` in an empty temporary folder.

  With ``reader``, the script is an exchange scenario: its ``write`` phase
  runs under ``python`` and its ``read`` phase under ``reader``, in the same
  folder; the records of both phases are returned together.
  """
  with tempfile.TemporaryDirectory() as tmp:
    if reader is None:
      return _run_in(python, script, tmp, timeout)
    first = _run_in(python, script, tmp, timeout, 'write')
    if first.returncode != 0:
      return first
    second = _run_in(reader, script, tmp, timeout, 'read')
    return Run(first.records + second.records, second.returncode, second.stderr)


def may_preload(script):
  """Whether ``script`` may run in a fork that has Flax imported already:
  not when it sets environment variables (Flax reads some at import)."""
  return 'os.environ' not in pathlib.Path(script).read_text()


def is_exchange(script):
  return script.name.endswith('_exchange.py')


def _close(a, b, rtol, atol):
  if isinstance(a, str) or isinstance(b, str):
    return a == b
  if math.isinf(a) or math.isinf(b):
    return a == b
  return abs(a - b) <= atol + rtol * abs(b)


def _compare_values(ref, got, exact, rtol, atol, where):
  if len(ref) != len(got):
    return [f'{where}: {len(got)} values, reference has {len(ref)}']
  bad = [
    i
    for i, (a, b) in enumerate(zip(got, ref))
    if not (a == b if exact else _close(a, b, rtol, atol))
  ]
  if not bad:
    return []
  i = bad[0]
  return [
    f'{where}: {len(bad)} of {len(ref)} values differ; first at flat index '
    f'{i}: {got[i]!r} vs reference {ref[i]!r}'
  ]


def _compare_array(ref, got, rec, where):
  if 'repr' in ref or 'repr' in got:
    if ref.get('repr') != got.get('repr'):
      return [f'{where}: {got.get("repr")!r} vs reference {ref.get("repr")!r}']
    return []
  problems = []
  for field in ('shape', 'dtype'):
    if ref.get(field) != got.get(field):
      problems.append(
        f'{where}: {field} {got.get(field)} vs reference {ref.get(field)}'
      )
  if problems:
    return problems
  exact = rec.get('exact') or ref['dtype'].startswith(
    ('int', 'uint', 'bool', 'key')
  )
  rtol, atol = rec.get('rtol', 1e-5), rec.get('atol', 1e-6)
  for field in ('values', 'summary', 'sample'):
    if field in ref or field in got:
      if field not in ref or field not in got:
        problems.append(f'{where}: {field} reported on one side only')
        continue
      problems += _compare_values(
        ref[field], got[field], exact, rtol, atol, f'{where} ({field})'
      )
  return problems


def _compare_json(ref, got, rtol, atol, where):
  if isinstance(ref, float) and isinstance(got, (int, float)):
    if not _close(float(got), ref, rtol, atol):
      return [f'{where}: {got!r} vs reference {ref!r}']
    return []
  if isinstance(ref, dict) and isinstance(got, dict):
    if list(ref) != list(got):
      return [f'{where}: keys {list(got)} vs reference {list(ref)}']
    out = []
    for k in ref:
      out += _compare_json(ref[k], got[k], rtol, atol, f'{where}.{k}')
    return out
  if isinstance(ref, list) and isinstance(got, list):
    if len(ref) != len(got):
      return [f'{where}: length {len(got)} vs reference {len(ref)}']
    out = []
    for i, (a, b) in enumerate(zip(ref, got)):
      out += _compare_json(a, b, rtol, atol, f'{where}[{i}]')
    return out
  if ref != got or type(ref) is not type(got):
    return [f'{where}: {got!r} vs reference {ref!r}']
  return []


def _text_diff(ref, got, where):
  import difflib

  diff = difflib.unified_diff(
    ref.splitlines(),
    got.splitlines(),
    'reference',
    'project',
    lineterm='',
    n=1,
  )
  return [f'{where}: text differs\n    ' + '\n    '.join(list(diff)[:60])]


def compare_record(ref, got):
  where = f'{ref["kind"]} {ref["label"]!r}'
  kind = ref['kind']
  if kind == 'array':
    return _compare_array(ref, got, ref, where)
  if kind == 'tree':
    rl, gl = ref['leaves'], got['leaves']
    if list(rl) != list(gl):
      missing = [k for k in rl if k not in gl]
      extra = [k for k in gl if k not in rl]
      return [
        f'{where}: paths differ; missing {missing[:10]}, extra {extra[:10]}'
        + ('' if missing or extra else ' (order differs)')
      ]
    out = []
    for k in rl:
      out += _compare_array(rl[k], gl[k], ref, f'{where} leaf {k!r}')
    return out
  if kind == 'value':
    return _compare_json(
      ref['value'], got['value'], ref['rtol'], ref['atol'], where
    )
  if kind == 'text':
    if ref['text'] != got['text']:
      return _text_diff(ref['text'], got['text'], where)
    return []
  if kind == 'error':
    if ref['error'] is None or got['error'] is None:
      if ref['error'] != got['error']:
        return [f'{where}: raised {got["error"]} vs reference {ref["error"]}']
      return []
    if ref['error'] not in got['mro']:
      return [
        f'{where}: raised {got["error"]}, which is not a {ref["error"]} '
        f'as in the reference'
      ]
    return []
  if kind == 'warnings':
    if ref['categories'] != got['categories']:
      return [
        f'{where}: warned {got["categories"]} vs reference {ref["categories"]}'
      ]
    return []
  return [f'{where}: unknown record kind']


def compare(name, ref, got):
  problems = []
  if ref.returncode != 0:
    tail = '\n    '.join(ref.stderr.strip().splitlines()[-6:])
    return [f'the scenario fails under the reference:\n    {tail}']
  if got.returncode != 0:
    tail = '\n    '.join(got.stderr.strip().splitlines()[-8:])
    problems.append(f'the scenario crashes under the project:\n    {tail}')
  ref_labels = [r['label'] for r in ref.records]
  got_by_label = {r['label']: r for r in got.records}
  if not ref.records:
    problems.append('the scenario reports nothing')
  for rec in ref.records:
    mine = got_by_label.get(rec['label'])
    if mine is None:
      if got.returncode == 0:
        problems.append(f'record {rec["label"]!r} missing from the project')
      continue
    if mine['kind'] != rec['kind']:
      problems.append(f'record {rec["label"]!r} is of another kind')
      continue
    problems += compare_record(rec, mine)
  extra = [r['label'] for r in got.records if r['label'] not in ref_labels]
  if extra:
    problems.append(f'records only the project reports: {extra}')
  return problems


RECORDED = HERE / '_recorded'
# What a reference result depends on besides the scenario and report.py.
STAMPED = ('flax', 'jax', 'jaxlib', 'numpy', 'optax', 'orbax-checkpoint')
_stamps = {}


def reference_stamp(reference):
  """The versions of the reference interpreter's libraries, one string."""
  if reference not in _stamps:
    code = (
      'import importlib.metadata as m\n'
      f'for d in {STAMPED!r}:\n'
      '  try: print(d, m.version(d))\n'
      '  except m.PackageNotFoundError: print(d, None)\n'
    )
    out = subprocess.run(
      [reference, '-c', code], capture_output=True, text=True, check=True
    )
    _stamps[reference] = ' '.join(out.stdout.split())
  return _stamps[reference]


def _cache_key(reference, script):
  h = hashlib.sha256()
  h.update(reference_stamp(reference).encode())
  h.update((HERE / 'report.py').read_bytes())
  h.update(script.read_bytes())
  return h.hexdigest()[:32]


def _recorded_path(script):
  return RECORDED / script.parent.name / f'{script.stem}.json'


@dataclasses.dataclass
class Reference:
  """The reference's result for a scenario and where it came from."""

  run: Run
  source: str  # 'recorded', 'cache' or 'live'


def _live(reference, script, timeout):
  reader = reference if is_exchange(script) else None
  return run_one(reference, script, timeout, reader=reader)


def reference_run(reference, script, cache, timeout, record=False):
  """The reference result: recorded in the repository, cached, or run now."""
  key = _cache_key(reference, script)
  recorded = _recorded_path(script)
  if recorded.exists():
    saved = json.loads(recorded.read_text())
    if saved['key'] == key:
      return Reference(Run(**saved['run']), 'recorded')
  path = pathlib.Path(cache) / f'{key}.json' if cache else None
  if path is not None and path.exists() and not record:
    return Reference(Run(**json.loads(path.read_text())), 'cache')
  result = _live(reference, script, timeout)
  if result.returncode == 0:
    if path is not None:
      path.parent.mkdir(parents=True, exist_ok=True)
      path.write_text(json.dumps(dataclasses.asdict(result)))
    if record:
      recorded.parent.mkdir(parents=True, exist_ok=True)
      saved = dict(key=key, run=dataclasses.asdict(result))
      recorded.write_text(json.dumps(saved, indent=1, sort_keys=True) + '\n')
  return Reference(result, 'live')


def _against(name, script, ref, project, reference, timeout):
  """Problems of the project's runs of ``script`` compared with ``ref``."""
  if not is_exchange(script):
    return compare(name, ref, run_one(project, script, timeout))
  problems = []
  for writer, reader, what in (
    (reference, project, 'written by the reference, read by the project'),
    (project, reference, 'written by the project, read by the reference'),
    (project, project, 'written and read by the project'),
  ):
    got = run_one(writer, script, timeout, reader=reader)
    problems += [f'[{what}] {p}' for p in compare(name, ref, got)]
  return problems


def check(script, reference, project, cache, timeout, record=False):
  name = str(script.relative_to(HERE))
  ref = reference_run(reference, script, cache, timeout, record)
  problems = _against(name, script, ref.run, project, reference, timeout)
  if problems and ref.source != 'live':
    # A stored result is a shortcut, never the last word: the reference
    # itself, run on this machine, decides.
    ref = Reference(_live(reference, script, timeout), 'live')
    problems = _against(name, script, ref.run, project, reference, timeout)
  return Outcome(name, problems, ref.source)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('--reference', required=True, help='reference interpreter')
  ap.add_argument('--project', default=sys.executable)
  ap.add_argument('-k', action='append', default=[], help='path substring')
  ap.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 1)
  ap.add_argument('--cache', default=None, help='reference result cache dir')
  ap.add_argument('--timeout', type=int, default=300)
  ap.add_argument('-v', '--verbose', action='store_true')
  ap.add_argument('--min-scenarios', type=int, default=0)
  ap.add_argument(
    '--record',
    action='store_true',
    help='store the reference results of the selected scenarios under '
    '_recorded/ where they are missing or out of date (commit them)',
  )
  ap.add_argument(
    '--no-fork',
    action='store_true',
    help='start a new interpreter for every run (no fork servers)',
  )
  a = ap.parse_args(argv)
  FORK_SERVERS.enabled = not a.no_fork
  try:
    return _run_all(a)
  finally:
    FORK_SERVERS.close()


def _run_all(a):
  found = scenarios(a.k)
  if not found:
    print('conformance: no scenario matches')
    return 1
  failed = 0
  with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
    futures = [
      pool.submit(
        check, s, a.reference, a.project, a.cache, a.timeout, a.record
      )
      for s in found
    ]
    sources = {}
    for fut in futures:
      out = fut.result()
      sources[out.reference] = sources.get(out.reference, 0) + 1
      if out.problems:
        failed += 1
        print(f'FAIL {out.scenario}')
        for p in out.problems:
          print(f'  - {p}')
      elif out.reference == 'live':
        # a stored result did not match (or none was stored): the
        # reference, run here, decided
        print(f'ok   {out.scenario} (reference run live)')
      elif a.verbose:
        print(f'ok   {out.scenario}')
  by_group = {}
  for s in found:
    by_group[s.parent.name] = by_group.get(s.parent.name, 0) + 1
  groups = ', '.join(f'{g} {n}' for g, n in sorted(by_group.items()))
  print(f'scenarios per group: {groups}')
  print(
    'reference results: '
    + ', '.join(f'{n} {k}' for k, n in sorted(sources.items()))
  )
  print(
    f'conformance: {len(found) - failed} passed, {failed} failed, '
    f'of {len(found)} scenarios'
  )
  if len(found) < a.min_scenarios:
    print(f'conformance: fewer than {a.min_scenarios} scenarios found')
    return 1
  return 1 if failed else 0


if __name__ == '__main__':
  sys.exit(main())
