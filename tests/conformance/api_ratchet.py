"""API ratchet: no public name of Flax 0.12.8 that this project has may go.

  python tests/conformance/api_ratchet.py            # check
  python tests/conformance/api_ratchet.py --update   # record a new baseline

`api_baseline.json` holds, for the tier-1 modules of Flax 0.12.8's API
inventory, the names this project provides and their count (the floor).
The check fails when a recorded name is missing or the count of present
names falls below the floor.

When the API checker of the workspace (`../shared/tools/api_check.py` next to
the checkout, or `$FLAX_API_CHECK`) is available it does the counting and its
`api:` line is printed; otherwise every recorded name is imported here.
"""

import argparse
import importlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import warnings

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BASELINE = HERE / 'api_baseline.json'


def _api_check_tool():
  path = os.environ.get('FLAX_API_CHECK') or str(
    ROOT.parent / 'shared' / 'tools' / 'api_check.py'
  )
  return pathlib.Path(path) if os.path.exists(path) else None


def _inventory(tool):
  return tool.parent.parent / 'spec' / 'flax-0.12.8-api.json'


def _tier1_names(tool):
  inv = json.loads(_inventory(tool).read_text())
  return {
    name: sorted(mod['names'])
    for name, mod in inv['modules'].items()
    if mod['tier'] == 1
  }


def present_with_tool(tool):
  """(present names per module, total, the tool's api line)."""
  with tempfile.TemporaryDirectory() as tmp:
    out = pathlib.Path(tmp) / 'api.json'
    proc = subprocess.run(
      [sys.executable, str(tool), '--tier', '1', '--json', str(out)],
      capture_output=True,
      text=True,
    )
    if proc.returncode != 0:
      sys.exit(f'api_check failed:\n{proc.stderr}')
    result = json.loads(out.read_text())
  line = [ln for ln in proc.stdout.splitlines() if ln.startswith('api:')][-1]
  names = _tier1_names(tool)
  present = {}
  total = 0
  for module, info in result.items():
    missing = set(info['missing'])
    total += info['total']
    present[module] = [n for n in names.get(module, []) if n not in missing]
  return present, total, line


def present_by_import(baseline):
  """The recorded names that are importable now."""
  warnings.simplefilter('ignore')
  present = {}
  for module, names in baseline['present'].items():
    try:
      mod = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - a module that fails counts as missing
      present[module] = []
      continue
    found = []
    for n in names:
      try:
        getattr(mod, n)
      except Exception:  # noqa: BLE001
        continue
      found.append(n)
    present[module] = found
  return present


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('--update', action='store_true', help='record a baseline')
  a = ap.parse_args(argv)
  os.environ.setdefault('JAX_PLATFORMS', 'cpu')
  tool = _api_check_tool()
  if a.update:
    if tool is None:
      sys.exit('--update needs the API checker (set FLAX_API_CHECK)')
    present, total, line = present_with_tool(tool)
    count = sum(len(v) for v in present.values())
    old = json.loads(BASELINE.read_text()) if BASELINE.exists() else None
    if old and count < old['floor']:
      sys.exit(f'refusing to lower the floor from {old["floor"]} to {count}')
    BASELINE.write_text(
      json.dumps(
        {'floor': count, 'total': total, 'present': present},
        indent=1,
        sort_keys=True,
      )
      + '\n'
    )
    print(line)
    print(f'api ratchet: baseline recorded, floor {count}')
    return 0
  baseline = json.loads(BASELINE.read_text())
  if tool is not None:
    present, _, line = present_with_tool(tool)
  else:
    present = present_by_import(baseline)
    count = sum(len(v) for v in present.values())
    line = (
      f'api: {count}/{baseline["total"]} names present '
      f'({100.0 * count / baseline["total"]:.1f}%), counted from the baseline'
    )
  print(line)
  lost = [
    f'{module}.{n}'
    for module, names in baseline['present'].items()
    for n in names
    if n not in set(present.get(module, ()))
  ]
  count = sum(len(v) for v in present.values())
  ok = True
  if lost:
    ok = False
    print(f'api ratchet: {len(lost)} names that were present are gone:')
    for name in lost:
      print(f'  {name}')
  if count < baseline['floor']:
    ok = False
    print(
      f'api ratchet: {count} names present, below the floor {baseline["floor"]}'
    )
  if ok:
    print(f'api ratchet: ok ({count} present, floor {baseline["floor"]})')
  return 0 if ok else 1


if __name__ == '__main__':
  sys.exit(main())
