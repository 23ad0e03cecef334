"""flax.errors: the error classes raised for common Linen mistakes."""

import jax
import jax.numpy as jnp
import report
from flax import errors
from flax.core import init, apply

report.value(
  'is-flax-error', issubclass(errors.ScopeParamShapeError, errors.FlaxError)
)


def f(scope):
  scope.param('w', jax.nn.initializers.ones, (2,))


variables = init(f)(jax.random.key(0))[1]
with report.raises('apply with wrong shapes'):

  def g(scope):
    scope.param('w', jax.nn.initializers.ones, (3,))

  apply(g)(variables)
with report.raises('missing param'):
  apply(f)({'params': {}})
with report.raises('apply frozen mutation'):

  def h(scope):
    v = scope.variable('state', 's', jnp.zeros, ())
    v.value = 1.0

  apply(h)({'state': {'s': jnp.zeros(())}})
