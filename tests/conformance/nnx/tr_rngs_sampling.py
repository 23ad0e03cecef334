"""Rngs stream sampling methods: same numbers, counts and dtypes as Flax."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

r = nnx.Rngs(5, params=0, dropout=1)
report.array('normal', r.params.normal((2, 3)))
report.array('uniform', r.params.uniform((4,), minval=-1.0, maxval=2.0))
report.array('bernoulli', r.dropout.bernoulli(0.3, (8,)))
report.array(
  'categorical',
  r.dropout.categorical(jnp.log(jnp.array([0.1, 0.2, 0.7])), shape=(6,)),
)
report.array('randint', r.params.randint((5,), 0, 10))
report.array('permutation', r.params.permutation(6))
report.array('truncated', r.params.truncated_normal(-1.0, 1.0, (3,)))
report.array('bits', r.params.bits((3,)))
report.array('choice', r.params.choice(10, (3,), replace=False))
report.array('normal-f16', r.params.normal((2,), jnp.float16))
report.array('count-params', r.params.count[...])
report.array('count-dropout', r.dropout.count[...])
report.array('default-normal', r.normal((2,)))
report.array('default-count', r.default.count[...])
report.array('key-call', jax.random.key_data(r.params()))
report.array('key-call-2', jax.random.key_data(r()))
report.array('gumbel', r.params.gumbel((2,)))
report.array('exponential', r.params.exponential((2,)))
report.array('laplace', r.params.laplace((2,)))
report.array('beta', r.params.beta(2.0, 3.0, (2,)))


@nnx.jit
def sample(r):
  return r.params.normal((3,)), r.dropout.uniform((2,))


a, b = sample(r)
report.array('jit-normal', a)
report.array('jit-uniform', b)
report.array('jit-count', r.params.count[...])
