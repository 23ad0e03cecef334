"""Functional core: weight standardization through lift.map_variables."""

import jax
import jax.numpy as jnp
import report
from flax.core import apply, init, lift


def dense(scope, x):
  k = scope.param('kernel', jax.nn.initializers.normal(), (x.shape[-1], 3))
  return x @ k


def standardize(variables):
  def std(w):
    w = w - w.mean(0, keepdims=True)
    return w / (w.std(0, keepdims=True) + 1e-5)

  return jax.tree_util.tree_map(std, variables)


std_dense = lift.map_variables(dense, 'params', standardize, init=True)


def model(scope, x):
  return scope.child(std_dense, 'std_dense')(x)


x = jnp.arange(8.0).reshape(2, 4)
y, variables = init(model)(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', y)
report.array('apply', apply(model)(variables, x))
