"""Functional core: a dense layer and an MLP built with Scope.child."""

import jax
import jax.numpy as jnp
import report
from flax.core import apply, init


def dense(scope, x, features):
  k = scope.param(
    'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], features)
  )
  b = scope.param('bias', jax.nn.initializers.zeros, (features,))
  return x @ k + b[None]


def mlp(scope, x, hidden=8, out=2):
  h = jax.nn.relu(scope.child(dense)(x, hidden))
  h = jax.nn.relu(scope.child(dense, 'hidden2')(h, hidden))
  return scope.child(dense, prefix='head_')(h, features=out)


x = jnp.arange(6.0).reshape(2, 3)
y, variables = init(mlp)(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', y)
report.array('apply', apply(mlp)(variables, x))
