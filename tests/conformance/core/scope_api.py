"""Scope API: reserve, push, name_reserved, flags, rng counters."""

import jax
import jax.numpy as jnp
import report
from flax.core import Scope, init


scope = Scope({}, flags={'a': 1})
report.value('has_flag', [scope.has_flag('a'), scope.has_flag('b')])
report.value('get_flag', [scope.get_flag('a'), scope.get_flag('b', 3)])
report.text('missing flag', str(scope.get_flag('b')))
scope.reserve('x', 'params')
report.value(
  'reserved',
  [
    scope.name_reserved('x'),
    scope.name_reserved('x', 'params'),
    scope.name_reserved('x', 'cache'),
    scope.name_reserved('y'),
  ],
)
with report.raises('duplicate'):
  scope.reserve('x')
scope.reserve('x', 'cache')
report.value('push names', [scope.push().name, scope.push(prefix='a').name])
report.value('default_name', scope.default_name('a'))


def draw(scope):
  return jax.random.key_data(scope.make_rng('dropout'))


def model(scope):
  g = scope.child(draw)
  report.array('first', g())
  report.array('second', g())
  report.array('named', scope.child(draw, 'x')())
  report.array('pushed', draw(scope.push('x', reuse=True)))


init(model)({'params': jax.random.key(0), 'dropout': jax.random.key(1)})


def missing(scope):
  scope.variable('state', 'n', jnp.zeros, ())


with report.raises('empty collection'):
  from flax.core import apply

  apply(missing)({'state': {}})
