"""Functional core: an auto-encoder with shared child scopes."""

import jax
import jax.numpy as jnp
import report
from flax.core import apply, init


def dense(scope, x, features):
  k = scope.param(
    'kernel', jax.nn.initializers.normal(0.1), (x.shape[-1], features)
  )
  return x @ k


def encoder(scope, x):
  return jnp.tanh(scope.child(dense)(x, 2))


def decoder(scope, z):
  return scope.child(dense)(z, 4)


def autoencoder(scope, x):
  encode = scope.child(encoder, 'encoder')
  decode = scope.child(decoder, 'decoder')
  z = encode(x)
  # Calling a child again reuses its variables.
  z2 = encode(x)
  return decode(z), jnp.abs(z - z2).max()


x = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
(y, diff), variables = init(autoencoder)(jax.random.key(1), x)
report.tree('variables', variables)
report.array('y', y)
report.array('diff', diff)
report.array('apply', apply(autoencoder)(variables, x)[0])
