"""nnx.scan with a StateAxes in_axes on an input that gains attributes
inside: the new leaves are stacked on their filter's axis."""

import jax
import jax.numpy as jnp
import report
from flax import nnx

axes = nnx.StateAxes({nnx.Param: 0, ...: None})


class S(nnx.Module):
  pass


s = S()


@nnx.scan(in_axes=(axes, nnx.Carry, 0), out_axes=(nnx.Carry, 0))
def build(s, c, key):
  s.w = nnx.Param(jax.random.normal(key, (3,)))
  return c + 1, c


c, ys = build(s, jnp.array(0), jax.random.split(jax.random.key(0), 4))
report.array('w', s.w[...])
report.array('carry', c)
report.array('ys', ys)
