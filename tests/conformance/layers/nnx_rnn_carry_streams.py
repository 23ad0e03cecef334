"""NNX recurrent cells: initialize_carry(carry_init=, rngs=), kept rngs,
nnx.RNN rngs streams and their warnings."""

import warnings

import jax.numpy as jnp
import report
from flax import nnx

init = nnx.initializers.normal()
cell = nnx.LSTMCell(3, 2, rngs=nnx.Rngs(0))
with report.raises('no-rngs'):
  cell.initialize_carry((1, 3))
report.tree(
  'carry', cell.initialize_carry((1, 3), rngs=nnx.Rngs(5), carry_init=init)
)
report.tree('carry-zeros', cell.initialize_carry((1, 3), rngs=nnx.Rngs(5)))
with report.warns('deprecations'):
  kept = nnx.SimpleCell(3, 2, carry_init=init, keep_rngs=True, rngs=nnx.Rngs(0))
report.array('kept-1', kept.initialize_carry((1, 3)))
report.array('kept-2', kept.initialize_carry((1, 3)))
with warnings.catch_warnings():
  warnings.simplefilter('ignore')
  rnn = nnx.RNN(kept)
  x = jnp.ones((1, 2, 3))
  report.tree('rnn-rngs', nnx.state(rnn, nnx.RngState))
  report.array('rnn-default', rnn(x))
  report.array('rnn-call-rngs', rnn(x, rngs=nnx.Rngs(3)))
  other = nnx.RNN(
    nnx.SimpleCell(3, 2, carry_init=init, rngs=nnx.Rngs(0)), rngs=nnx.Rngs(7)
  )
  report.array('rnn-init-rngs', other(x))
  none = nnx.RNN(nnx.SimpleCell(3, 2, rngs=nnx.Rngs(0)), rngs=False)
  with report.raises('rnn-without-rngs'):
    none(x)
