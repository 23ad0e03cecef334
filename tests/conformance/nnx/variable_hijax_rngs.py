"""Rngs created under nnx.var_defaults(hijax=True): hijax RngKey/RngCount
drawing keys outside transforms, inside jax.jit (as an argument and as a
closure), with the counts updated in place."""

import jax
import jax.numpy as jnp
import report
from flax import nnx


class Noisy(nnx.Module):
  def __init__(self, rngs):
    self.w = nnx.Param(jax.random.normal(rngs.params(), (2, 3)))
    self.rngs = rngs

  def __call__(self, x):
    key = self.rngs.dropout()
    return x @ self.w[...] + jax.random.normal(key, (1, 3))


with nnx.var_defaults(hijax=True):
  rngs = nnx.Rngs(0, dropout=1)
  m = Noisy(rngs)
report.text('rngs', repr(rngs))
report.value('types', [type(x).__name__ for x in jax.tree.leaves(nnx.state(m))])
x = jnp.ones((1, 2))
report.array('call', m(x))
report.array('count', m.rngs.dropout.count[...])
report.array('jit-arg', jax.jit(lambda m, x: m(x))(m, x))
report.array('count-after-jit', m.rngs.dropout.count[...])
report.array('jit-closure', jax.jit(lambda x: m(x))(x))
report.array('count-after-closure', m.rngs.dropout.count[...])
report.array(
  'rngs-arg', jax.random.key_data(jax.jit(lambda r: r.params())(rngs))
)
report.array('params-count', rngs.params.count[...])
report.array('w', m.w[...])
