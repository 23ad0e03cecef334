"""Functional core: lift.scan and lift.vmap over child scopes."""

import jax
import jax.numpy as jnp
import report
from flax.core import init, lift


def cell(scope, c, x):
  w = scope.param(
    'w', jax.nn.initializers.normal(0.5), (x.shape[-1], c.shape[-1])
  )
  c = jnp.tanh(c + x @ w)
  return c, c.sum(-1)


def rnn(scope, xs):
  scanned = lift.scan(
    cell, variable_broadcast='params', split_rngs={'params': False}
  )
  return scope.child(scanned, 'rnn')(jnp.zeros((2, 3)), xs)


def ensemble(scope, x):
  def member(scope, x):
    return scope.child(cell, 'cell')(jnp.zeros((3,)), x)[0]

  vm = lift.vmap(
    member, variable_axes={'params': 0}, split_rngs={'params': True}, in_axes=0
  )
  return scope.child(vm, 'members')(x)


xs = jnp.ones((4, 2, 5))
(c, ys), variables = init(rnn)(jax.random.key(0), xs)
report.tree('rnn variables', variables)
report.array('carry', c)
report.array('ys', ys)
out, variables = init(ensemble)(jax.random.key(1), jnp.ones((3, 5)))
report.tree('ensemble variables', variables)
report.array('members', out)
