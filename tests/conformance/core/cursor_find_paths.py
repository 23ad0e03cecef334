"""flax.cursor: find/find_all over nested containers, paths, iteration,
truth values, str and repr of pending changes."""

import dataclasses
from typing import NamedTuple

import report
from flax import struct
from flax.cursor import cursor


class NT(NamedTuple):
  a: int
  b: tuple


@struct.dataclass
class DC:
  x: int
  y: dict


tree = {
  'a': 1,
  'b': [2, {'c': 3, 'd': (4, 5)}],
  'e': NT(6, (7, 8)),
  'f': DC(9, {'g': 10}),
}
c = cursor(tree)
report.value('iter list', [x._obj for x in c['b']][0])
report.value('iter namedtuple', [repr(x._obj) for x in c['e']])
report.value('namedtuple fields', [c['e'].a._obj, c['e'].b[1]._obj])
with report.raises('iter dict'):
  iter(c)
report.value(
  'find_all paths',
  [x._path for x in c.find_all(lambda p, v: isinstance(v, int) and v > 8)],
)
report.value(
  'find_all no descent',
  [x._path for x in c.find_all(lambda p, v: isinstance(v, (dict, list)))],
)
report.value('find path', c.find(lambda p, v: p == 'f/y/g')._path)
seen = []
list(c.find_all(lambda p, v: seen.append(p) or False))
report.value('visited paths', seen)
with report.raises('find none'):
  c.find(lambda p, v: v == 'zz')

nested = cursor({'k0': {'x': [1]}, 'k1': {'x': [2]}, 'k2': {'x': []}})
with report.raises('find two truthy'):
  nested.find(lambda p, v: p in ('k0/x', 'k1/x'))
with report.raises('find falsy second'):
  nested.find(lambda p, v: p in ('k0/x', 'k2/x'))
with report.raises('find scalars'):
  cursor({'a': 1, 'b': 2}).find(lambda p, v: True)
report.value('find single empty', nested.find(lambda p, v: p == 'k2/x')._path)
for value in [[], [1], {}, {'a': 1}, '']:
  report.value(f'bool {value!r}', bool(cursor(value)))
with report.raises('bool int'):
  bool(cursor(5))

pending = cursor(tree)
pending['b'][1]['c'] = 30
pending['e'].a = 60
pending['f'].x = 90
report.text('repr pending', repr(pending))
report.text('str pending', str(pending))
report.text('build', repr(pending.build()))
report.value(
  'sub paths',
  [pending['b'][1]['d'][0]._path, pending['f'].y['g']._path, pending._path],
)


@dataclasses.dataclass
class Inner:
  w: int


report.text(
  'apply_update',
  repr(
    cursor({'l': [Inner(1), Inner(2)], 'o': Inner(3)})
    .apply_update(lambda p, v: v * 10 if isinstance(v, int) else v)
    .build()
  ),
)
