"""Functional core: lift.custom_vjp on a child scope (sign gradient)."""

import jax
import jax.numpy as jnp
import report
from flax.core import apply, init, lift


def dense(scope, x):
  w = scope.param('w', jax.nn.initializers.normal(), (x.shape[-1], 1))
  return (x @ w).sum()


def fwd(scope, x):
  y, vjp_fn = lift.vjp(dense, scope, x)
  return y, vjp_fn


def bwd(vjp_fn, g):
  params_grad, x_grad = vjp_fn(g)
  sign = jax.tree_util.tree_map(jnp.sign, params_grad)
  return sign, jnp.sign(x_grad)


sign_dense = lift.custom_vjp(dense, forward_fn=fwd, backward_fn=bwd)


def model(scope, x):
  return scope.child(sign_dense, 'dense')(x)


x = jnp.array([[1.0, -2.0, 3.0]])
y, variables = init(model)(jax.random.key(0), x)
report.tree('variables', variables)
report.array('y', y)
grads = jax.grad(lambda v, x: apply(model)(v, x), argnums=(0, 1))(variables, x)
report.tree('grads', grads)
