"""Bad PRNG arguments to init / apply (core and Linen) and bind: which
error class each raises; a bare key in core apply means {'params': key}."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.core import apply, bind, init


def f(scope):
  return scope.param('b', jax.nn.initializers.zeros, (3,))


variables = {'params': {'b': jnp.zeros(3)}}
with report.raises('core init, dict of ints'):
  init(f)({'params': 0})
with report.raises('core init, int'):
  init(f)(0)
with report.raises('core apply, dict of ints'):
  apply(f)(variables, rngs={'params': 0})
with report.raises('core apply, int'):
  apply(f)(variables, rngs=0)
with report.raises('bind, dict of ints'):
  bind({}, rngs={'params': 3})
key = jax.random.key(0)
drawn = apply(lambda scope: scope.make_rng('params'))({}, rngs=key)
report.array('core apply, bare key', jax.random.key_data(drawn))

m = nn.Dense(2)
x = jnp.ones((1, 3))
v = m.init(jax.random.key(0), x)
with report.raises('linen apply, dict of ints'):
  m.apply(v, x, rngs={'params': 0})
with report.raises('linen apply, int'):
  m.apply(v, x, rngs=0)
with report.raises('linen init, dict of floats'):
  m.init({'params': jnp.ones(2)}, x)
with report.raises('linen init, str'):
  m.init('a', x)
