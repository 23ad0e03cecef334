"""lift.vmap / lift.scan with flax.typing.In / Out variable axes."""

import jax
import jax.numpy as jnp
import report
from flax.core import apply, init, lift
from flax.typing import In, Out


def dense(scope, x):
  w = scope.param('w', jax.nn.initializers.ones, (x.shape[-1], 2))
  c = scope.variable('state', 'c', jnp.zeros, (2,))
  c.value = c.value + x.sum()
  return x @ w


def vm(axes):
  return lift.vmap(dense, variable_axes=axes, split_rngs={'params': True})


_, v = init(vm({'params': 0, 'state': Out(0)}))(
  jax.random.key(0), jnp.ones((4, 3))
)
report.tree('out axes', v)
with report.raises('input only'):
  init(vm({'params': 0, 'state': In(None)}))(
    jax.random.key(0), jnp.ones((4, 3))
  )
v = {'params': {'w': jnp.ones((4, 3, 2))}, 'state': {'c': jnp.ones((4, 2))}}
_, s = apply(vm({'params': 0, 'state': Out(0)}), mutable=True)(
  v, jnp.ones((4, 3))
)
report.tree('apply out', s)


def body(scope, c, x):
  w = scope.param('w', jax.nn.initializers.ones, ())
  return c + w * x, c


scanned = lift.scan(
  body, variable_axes={'params': In(0)}, split_rngs={'params': True}
)
report.tree(
  'scan in',
  apply(scanned)({'params': {'w': jnp.arange(3.0)}}, 0.0, jnp.ones(3)),
)
