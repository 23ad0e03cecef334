"""flax.cursor edits of nested containers; Generic struct dataclasses."""

import collections
import dataclasses
import typing

import report
from flax import cursor, struct

Point = collections.namedtuple('Point', 'a b')
c = cursor.cursor(Point(1, [2, 3]))
c.b[0] = 5
report.text('namedtuple', repr(c.build()))
c = cursor.cursor({'a': [1, (2, 3)]})
c['a'][1][0] = 9
report.text('dict of lists', repr(c.build()))


@dataclasses.dataclass
class D:
  x: int
  y: list


c = cursor.cursor(D(1, [1]))
c.y[0] = 7
c.x = 3
report.text('dataclass', repr(c.build()))
report.value(
  'is_named_tuple',
  [cursor.is_named_tuple(Point(1, 2)), cursor.is_named_tuple((1,))],
)
T = typing.TypeVar('T')


class Box(struct.PyTreeNode, typing.Generic[T]):
  x: T


report.text('generic parameters', repr(Box.__parameters__))
report.text('generic instance', repr(Box[int](3)))
