"""Functional core: init/apply with Scope.param and nested scopes."""

import jax
import jax.numpy as jnp
import report
from flax.core import apply, init


def mlp(scope, x):
  w = scope.param('w', jax.nn.initializers.lecun_normal(), (x.shape[-1], 3))
  b = scope.param('b', jax.nn.initializers.zeros, (3,))
  h = x @ w + b[None, :]
  counter = scope.variable('counter', 'n', jnp.zeros, ())
  if scope.is_mutable_collection('params') is False:
    counter.value += 1
  return jnp.tanh(h)


x = jnp.ones((2, 4))
y, variables = init(mlp)(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', y)
y2, updated = apply(mlp, mutable=['counter'])(variables, x)
report.tree('updated', updated)
report.array('y2', y2)
