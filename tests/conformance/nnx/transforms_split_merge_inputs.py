"""flax.nnx.transforms.general split_inputs / merge_inputs around jax.jit."""

import jax
import jax.numpy as jnp
import report
from flax import nnx
from flax.nnx.transforms.general import merge_inputs, split_inputs


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.c = nnx.BatchStat(jnp.zeros(()))


m = M()


@split_inputs
@jax.jit
@merge_inputs
def f(m, x):
  m.c[...] += 1
  return m.w[...] * x, m


y, out = f(m, 2.0)
report.array('y', y)
report.value('same-object', out is m)
report.array('c', m.c[...])


def add(m):
  m.extra = nnx.Param(jnp.zeros(1))
  return 1


report.value('add', split_inputs(jax.jit(merge_inputs(add)))(m))
report.value('has-extra', hasattr(m, 'extra'))
report.tree('state', nnx.state(m))
