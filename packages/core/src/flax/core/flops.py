"""FLOP estimates for the ``tabulate`` tables of Linen and NNX.

Both report XLA's estimate of the lowered (unoptimized) computation, and
for the backward pass pull back each output as its own cotangent (a
computed value, so that the estimate counts the whole pass; a constant
one would fold away).

>>> import jax.numpy as jnp
>>> from flax.core import flops
>>> flops.lowered_flops(lambda x: x * 2, jnp.ones(3))
3
"""

import jax
import numpy as np


def lowered_flops(fn, *args) -> int:
  """XLA's FLOP estimate of ``fn(*args)`` (lowered, not run)."""
  cost = jax.jit(fn).lower(*args).cost_analysis()
  if isinstance(cost, (list, tuple)):
    cost = cost[0] if cost else None
  if not cost:
    return 0
  return int(cost.get('flops', 0))


def self_cotangent(y):
  """The cotangent of output ``y`` in a VJP estimate: ``y`` itself (float0
  zeros for integer outputs; Python and NumPy scalars count as arrays)."""
  if jax.dtypes.issubdtype(jax.dtypes.result_type(y), np.inexact):
    return y
  return np.zeros(np.shape(y), jax.dtypes.float0)
