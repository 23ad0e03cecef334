"""``python -m flax.plugins``: prints every plugin and what it provides."""

import sys
import warnings

from flax.plugins import _registry


def _describe(kind, record):
  if kind == 'exports':
    return f'{record.namespace}.{record.name} -> {record.target}'
  if kind in ('checkpoint_backends', 'partitioning_backends'):
    return f'{record.name} (priority {record.priority}) -> {record.target}'
  if kind == 'state_handlers':
    return f'{record.type}'
  return f'{record.name} = {record.default!r}'


def report(reg=None, out=None) -> int:
  """Writes the plugin report; returns the number of problems."""
  out = out or sys.stdout
  with warnings.catch_warnings():
    warnings.simplefilter('ignore')  # the report itself lists every problem
    if reg is None:
      reg = _registry.registry()
    reg.load_all()
  write = lambda line='': print(line, file=out)  # noqa: E731
  write(
    f'Flax plugins ({len(reg.plugins)} found in entry-point group '
    f'{_registry.ENTRY_POINT_GROUP!r})'
  )
  for info in reg.plugins:
    party = 'first-party' if info.first_party else 'third-party'
    write()
    status = info.status
    if info.skipped:
      status += f' ({len(info.skipped)} records skipped)'
    write(f'{info.distribution} {info.version} [{party}] {status}')
    write(f'  entry point: {info.entry_point}')
    if info.error:
      write(f'  error: {info.error}')
    for reason in info.skipped:
      write(f'  skipped record: {reason}')
    for kind, records in sorted(info.provides.items()):
      if not records:
        continue
      write(f'  {kind.replace("_", " ")} ({len(records)}):')
      for record in records:
        write(f'    {_describe(kind, record)}')
  skipped = sum(len(info.skipped) for info in reg.plugins)
  problems = len(reg.failures()) + len(reg.conflicts) + skipped
  if reg.conflicts:
    write()
    write('Conflicts:')
    for conflict in reg.conflicts.values():
      write(f'  {conflict.message()}')
  write()
  write(
    f'{len(reg.plugins)} plugins, {len(reg.failures())} failed, '
    f'{skipped} records skipped, {len(reg.conflicts)} conflicts'
  )
  return problems


if __name__ == '__main__':
  sys.exit(1 if report() and _registry.strict_mode() else 0)
