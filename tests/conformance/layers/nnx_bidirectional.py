"""nnx.Bidirectional: merge_fn, rngs, carries."""

import jax.numpy as jnp
import report
from flax import nnx


def rnn(seed):
  return nnx.RNN(nnx.GRUCell(3, 2, rngs=nnx.Rngs(seed)), rngs=False)


x = jnp.linspace(-1, 1, 2 * 4 * 3).reshape(2, 4, 3)
b = nnx.Bidirectional(rnn(0), rnn(1))
report.value('rngs-type', type(b.rngs).__name__)
report.tree('out', b(x, return_carry=True))
report.array('merge-fn', nnx.Bidirectional.merge_fn(jnp.ones(2), jnp.zeros(2)))
