"""A non-hashable static argument to nnx.jit: Flax raises ValueError (as
jax.jit does); the project raises TypeError."""

import jax.numpy as jnp
import report
from flax import nnx


@nnx.jit(static_argnames=('k',))
def f(x, k=1):
  return x * 2


with report.raises('non-hashable-static'):
  f(jnp.ones(2), k=[1])
