"""flax.core.lift helpers: value_and_grad, swap_collection, set_from_dict."""

import jax
import jax.numpy as jnp
import report
from flax.core import apply, init, lift


def f(scope, x):
  w = scope.param('w', jax.nn.initializers.ones, (2,))
  return (w * x).sum()


def m(scope, x):
  y, grads = lift.value_and_grad(f, scope, x)
  report.array('value', y)
  report.tree('input grads', grads)
  y, aux, grads = lift.value_and_grad(
    lambda s, x: (f(s, x), 7), scope, x, has_aux=True
  )
  report.value('aux', aux)
  return y


init(m)(jax.random.key(0), jnp.arange(2.0))


def g(scope):
  report.tree('inside', {k: dict(v) for k, v in scope.variables().items()})
  scope.put_variable('b', 'x', 2.0)


_, out = apply(lift.swap_collection(g, 'a', 'b'), mutable=True)(
  {'a': {'x': 1.0}, 'b': {'y': 0.0}}
)
report.tree('swapped out', out)
d = {'a': {'b': 1, 'c': 2}}
lift.set_from_dict(d, {'a': {'b': 3}, 'q': 1})
report.value('set_from_dict', d)
c = lift.CountsHolder.make({'a': {'b': 3, 'c': 2}})
report.value('counts', c.sub(lift.CountsHolder.make({'a': {'b': 1}})).unflat())
