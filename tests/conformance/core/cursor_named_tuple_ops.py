"""flax.cursor: named-tuple items are fields, numeric dunders, nested repr."""

import typing

import jax.numpy as jnp
import report
from flax import core
from flax.cursor import cursor


class G(typing.NamedTuple):
  x: typing.Any
  y: typing.Any = None


t = G(G(0, 1), G(2, 3))
c = cursor(t)
c.x.x = 4
c[0].y = 5
report.text('repr merged', repr(c))
c.y.x = 6
c.y[1] = 7
report.text('build', repr(c.build()))
c[0][1] = -5
c.x[1] = -6
report.text('build overwrite', repr(c.build()))
c = cursor(t)
c[-1] = 'neg'
report.text('negative index', repr(c.build()))
c = cursor(t)
report.value('same child', [c[0] is c.x, c[-1] is c.y])
report.value('iter keys', [str(ch._parent_key.key) for ch in cursor(t)])

for value in (7, 7.5):
  cv = cursor(value)
  report.value(f'{value} divmod', list(divmod(cv, 2)))
  report.value(f'{value} rdivmod', list(divmod(23, cv)))
  report.value(f'{value} round', round(cv))
  report.value(f'{value} round 1', round(cv + 0.123, 1))
  report.value(f'{value} pow', pow(cv, 2))
  report.value(f'{value} ne', cv != 7)
  with report.raises(f'{value} pow mod'):
    pow(cv, 2, 5)
a = jnp.array([[1, -2], [3, 4]])
report.array('array ne', cursor(a) != jnp.array([[1, 2], [3, 4]]))
report.array('array rne', jnp.array([[1, 2], [3, 4]]) != cursor(a))
report.array('array divmod', divmod(cursor(a), 3)[1])

c = cursor({'k': {'j': 1}})
c['k']['j'] = core.freeze({'a': 1, 'b': {'c': 2}})
report.text('nested repr', repr(c))
report.text('root repr', repr(cursor(core.freeze({'a': 1}))))
